//! The side under test: tract runs the ONNX file, loaded and optimized once with its batch
//! symbol left free, at every batch size.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tract_onnx::prelude::{
    Framework, InferenceModelExt, IntoRunnable, Tensor, TractError, TypedRunnableModel,
};

use super::{Array, CheckError};

/// An ONNX model ready to run.
pub struct OnnxModel {
    plan: Arc<TypedRunnableModel>,
    path: PathBuf,
}

impl OnnxModel {
    /// Loads, type-checks and optimizes the ONNX file at `path` with tract.
    pub fn load(path: &Path) -> Result<OnnxModel, CheckError> {
        let plan = tract_onnx::onnx()
            .model_for_path(path)
            .and_then(|m| m.into_optimized())
            .and_then(|m| m.into_runnable())
            .map_err(|e| CheckError::new(path, format!("tract cannot load it: {e:#}")))?;
        Ok(OnnxModel {
            plan,
            path: path.to_owned(),
        })
    }

    /// Runs the graph on `inputs` (graph input order); its outputs as float32, in graph order.
    pub fn run(&self, inputs: &[Array]) -> Result<Vec<Array>, CheckError> {
        let fail =
            |e: TractError| CheckError::new(&self.path, format!("tract failed to run it: {e:#}"));
        let values = inputs
            .iter()
            .map(|a| Tensor::from_shape(&a.shape, &a.data).map(|t| t.into()))
            .collect::<Result<_, _>>()
            .map_err(fail)?;
        let outputs = self.plan.run(values).map_err(fail)?;
        outputs
            .iter()
            .map(|value| {
                let as_f32 = value.cast_to::<f32>()?;
                let view = as_f32.to_plain_array_view::<f32>()?;
                Ok(Array {
                    shape: value.shape().to_vec(),
                    data: view.iter().copied().collect(),
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)
    }
}
