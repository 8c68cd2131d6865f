//! Exporting a user's own model from a `torch.export` program (`.pt2`) to ATC-ready ONNX.
//!
//! The program's aten graph ([`ckpt_import::pt2`]) is lowered node by node (`lower`,
//! `aten`) onto one `GraphBuilder`, the same for every input kind (a torchvision
//! checkpoint is written as the program torch.export records for it), so the same rules
//! hold: one opset, the batch as a named `dim_param` and
//! never an operand of shape arithmetic, BatchNorm folded into the Conv before it, and the
//! ATC check (`super::atc::validate`) run on every export. Parameters, buffers and lifted
//! constants become initializers under their FQNs (`layer1.0.conv1.weight`).
//!
//! The batch: a program exported with a dynamic first dimension keeps it; one traced at a
//! fixed batch is exported with a dynamic batch anyway when every node keeps that size as
//! the first dimension of its output and never computes across it; otherwise the error
//! names the node that froze it, with its module and stack trace. With a dynamic batch,
//! the batch may move to any dimension or fold into one (`k·N`: attention heads, Swin
//! windows, patches, time-major sequences): each activation is an ONNX value with torch's
//! own axes, the batch on one of them (`tensor`), so layouts lower to Transposes and
//! Reshapes with constant shapes and no node computes a shape. Ops across the batch are
//! refused as mixing samples; graph outputs keep torch's layout, their batch `dim_param`
//! on the dimension where torch's output has it.

mod alias;
mod aten;
mod batch;
pub(crate) mod dynamic;
mod emit;
mod fold;
mod located;
mod lower;
mod outputs;
mod tensor;

use std::fmt;
use std::path::Path;

use ckpt_aten::eval::Tensor;
use ckpt_aten::program::{ExportedProgram, SymInt};
use ckpt_formats::torch::read_tensor::MappedTensor;
use ckpt_formats::torch::DType;
use ckpt_import::pt2::Pt2Archive;

use super::atc;
use super::write::{self, WriteOptions, Written};
use super::{Batch, Extent, OnnxError, Opset};

pub use batch::BatchDim;

/// What `to-onnx` on a `.pt2` archive can be asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramOptions {
    /// The default-domain opset of the file.
    pub opset: Opset,
    /// The batch axis: dynamic (named) or a fixed size.
    pub batch: Batch,
    /// The ONNX name of a single-input model's input (`None`: `input`). A model with
    /// several inputs names them after its forward's parameters, and refuses a name here.
    pub input_name: Option<String>,
    /// The output's name (the base name of several outputs).
    pub output_name: String,
    /// Fold BatchNorm into the convolution before it where it can be.
    pub fold_bn: bool,
    /// File layout and memory budget.
    pub write: WriteOptions,
}

impl Default for ProgramOptions {
    fn default() -> Self {
        ProgramOptions {
            opset: Opset::default(),
            batch: Batch::Dynamic("batch".to_owned()),
            input_name: None,
            output_name: "output".to_owned(),
            fold_bn: true,
            write: WriteOptions::default(),
        }
    }
}

/// What an export did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramReport {
    /// The graph inputs in order: ONNX name and per-sample sizes (without the batch).
    pub inputs: Vec<(String, Vec<Extent>)>,
    /// Each output: one output is named `--output-name`, a dict's outputs after its keys,
    /// any other several `<output-name>_<k>`.
    pub outputs: Vec<OutputShape>,
    /// The batch as the archive had it.
    pub batch: BatchDim,
    /// Program nodes, and ONNX nodes and initializers written.
    pub program_nodes: usize,
    /// ONNX nodes written.
    pub nodes: usize,
    /// ONNX initializers written.
    pub initializers: usize,
    /// The file(s) written.
    pub written: Written,
}

/// A graph output as written: torch's layout, so the batch is on the dimension where
/// torch's output has it (`x.unsqueeze(0)` of a batch-first input has it on dimension 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputShape {
    /// The ONNX name.
    pub name: String,
    /// The dimension that carries the batch (its `dim_param`, or `--batch N`'s size);
    /// `None` in a static export (`--batch static`), where `sizes` are every dimension.
    pub batch_axis: Option<usize>,
    /// The other dimensions, in order.
    pub sizes: Vec<Extent>,
}

impl fmt::Display for OutputShape {
    /// `` `output` [1, batch, 4, 5] ``.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut dims: Vec<String> = self.sizes.iter().map(ToString::to_string).collect();
        if let Some(axis) = self.batch_axis {
            dims.insert(axis.min(dims.len()), "batch".into());
        }
        write!(f, "`{}` [{}]", self.name, dims.join(", "))
    }
}

/// Where the lowering reads stored tensors (parameters, buffers, constants) by FQN: a
/// `.pt2` archive, or a TorchScript archive's `data.pkl` ([`crate::script`]).
pub trait TensorSource {
    /// Tensor `fqn`'s sizes.
    fn dims(&self, fqn: &str) -> Result<Vec<u64>, OnnxError>;
    /// Tensor `fqn`'s element type.
    fn dtype(&self, fqn: &str) -> Result<DType, OnnxError>;
    /// Tensor `fqn`'s values in row-major order as `f32`.
    fn read_f32(&mut self, fqn: &str) -> Result<Vec<f32>, OnnxError>;
    /// Integer tensor `fqn`'s values in row-major order, exact.
    fn read_i64(&mut self, fqn: &str) -> Result<Vec<i64>, OnnxError>;
    /// Float tensor `fqn` as a view of the mapped input, when the source can map it: an
    /// initializer made from it is then computed as the file is written, never held.
    fn mapped(&self, _fqn: &str) -> Option<MappedTensor> {
        None
    }

    /// Tensor `fqn` for constant evaluation: an integer tensor exact as int64, any other
    /// as float32.
    fn read_tensor(&mut self, fqn: &str) -> Result<Tensor, OnnxError> {
        let dims = self.dims(fqn)?;
        let tensor = if self.dtype(fqn)?.is_integer() {
            Tensor::i64(dims, self.read_i64(fqn)?)
        } else {
            Tensor::f32(dims, self.read_f32(fqn)?)
        };
        tensor.map_err(|e| OnnxError::Program {
            what: format!("tensor `{fqn}`: {e}"),
        })
    }
}

impl TensorSource for Pt2Archive {
    fn dims(&self, fqn: &str) -> Result<Vec<u64>, OnnxError> {
        Ok(self.tensor(fqn)?.layout.sizes.clone())
    }

    fn dtype(&self, fqn: &str) -> Result<DType, OnnxError> {
        Ok(self.tensor(fqn)?.layout.dtype)
    }

    fn read_f32(&mut self, fqn: &str) -> Result<Vec<f32>, OnnxError> {
        Ok(Pt2Archive::read_f32(self, fqn)?)
    }

    fn read_i64(&mut self, fqn: &str) -> Result<Vec<i64>, OnnxError> {
        Ok(Pt2Archive::read_i64(self, fqn)?)
    }

    fn mapped(&self, fqn: &str) -> Option<MappedTensor> {
        self.map_tensor(fqn)
    }
}

/// Exports the program in `archive` to `out`.
pub fn export_program(
    archive: &mut Pt2Archive,
    options: &ProgramOptions,
    out: &Path,
) -> Result<ProgramReport, OnnxError> {
    let program = archive.program.clone();
    export_with(&program, archive, options, out)
}

/// Exports `program`, reading its stored tensors from `tensors`, to `out`.
pub fn export_with(
    program: &ExportedProgram,
    tensors: &mut dyn TensorSource,
    options: &ProgramOptions,
    out: &Path,
) -> Result<ProgramReport, OnnxError> {
    let target = target(options)?;
    if options.batch == Batch::Static {
        refuse_dynamic(program)?;
    }
    let program_nodes = program.graph_module.graph.nodes.len();
    let dims = dynamic::find(program)?;
    if !dims.is_empty() {
        let program_at = dynamic::specialized(program);
        return export_dynamic(&program_at, &dims, program_nodes, tensors, options, out);
    }
    let lowered = lower::lower(program, tensors, &target)?;
    finish(
        lowered,
        dynamic::IoExtents::new(),
        program_nodes,
        options,
        out,
    )
}

/// Exports a program with the dynamic dimensions `dims` besides the batch, given at any
/// of their sizes by `program_at` (of `program_nodes` nodes), to `out`.
pub(crate) fn export_dynamic(
    program_at: &dynamic::ProgramAt<'_>,
    dims: &[dynamic::DynamicDim],
    program_nodes: usize,
    tensors: &mut dyn TensorSource,
    options: &ProgramOptions,
    out: &Path,
) -> Result<ProgramReport, OnnxError> {
    let target = target(options)?;
    let (lowered, extents) = dynamic::lower_dynamic(program_at, tensors, &target, dims)?;
    finish(lowered, extents, program_nodes, options, out)
}

/// The lowering's target from `options`; a batch of 0 is refused.
fn target(options: &ProgramOptions) -> Result<lower::Target<'_>, OnnxError> {
    if options.batch == Batch::Fixed(0) {
        return Err(OnnxError::Option {
            what: "the batch must be at least 1".into(),
        });
    }
    Ok(lower::Target {
        opset: options.opset,
        batch: options.batch.clone(),
        input_name: options.input_name.as_deref(),
        output_name: &options.output_name,
        fold_bn: options.fold_bn,
    })
}

/// The ATC check, the file written, and the report on it.
fn finish(
    lowered: lower::Lowered,
    extents: dynamic::IoExtents,
    program_nodes: usize,
    options: &ProgramOptions,
    out: &Path,
) -> Result<ProgramReport, OnnxError> {
    atc::validate(&lowered.model, &options.batch)?;
    let written = write::write(&lowered.model, out, &options.write)?;
    let with_extents = |io: Vec<(String, Vec<u64>)>| -> Vec<(String, Vec<Extent>)> {
        io.into_iter()
            .map(|(name, shape)| {
                let sizes = extents
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| Extent::all_fixed(&shape));
                (name, sizes)
            })
            .collect()
    };
    let outputs = lowered
        .outputs
        .into_iter()
        .map(|o| OutputShape {
            sizes: extents.get(&o.name).cloned().unwrap_or(o.sizes),
            ..o
        })
        .collect();
    Ok(ProgramReport {
        inputs: with_extents(lowered.inputs),
        outputs,
        batch: lowered.batch,
        program_nodes,
        nodes: lowered.model.graph.node.len(),
        initializers: lowered.model.initializers.len(),
        written,
    })
}

/// A static export (`--batch static`) fixes every size as the program records it: a
/// program whose inputs declare a dynamic dimension is refused, naming it.
fn refuse_dynamic(program: &ExportedProgram) -> Result<(), OnnxError> {
    for sizes in lower::user_input_sizes(program)? {
        let dynamic = sizes.iter().find_map(|s| match s {
            SymInt::Int(_) => None,
            SymInt::Expr(expr) => Some(ckpt_aten::program::symbol_name(expr)),
            SymInt::Name(name) => Some(name.as_str()),
        });
        if let Some(name) = dynamic {
            return Err(OnnxError::Option {
                what: format!(
                    "--batch static exports every size as the program records it, but the program declares the dynamic dimension {name} (an input of sizes {}); export it without `dynamic_shapes` (at the sizes to deploy), or use `--batch dynamic`",
                    batch::show(sizes)
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Bytes;

    /// A program reading no stored tensor.
    struct NoTensors;

    impl TensorSource for NoTensors {
        fn dims(&self, fqn: &str) -> Result<Vec<u64>, OnnxError> {
            Err(OnnxError::Program { what: fqn.into() })
        }
        fn dtype(&self, fqn: &str) -> Result<DType, OnnxError> {
            Err(OnnxError::Program { what: fqn.into() })
        }
        fn read_f32(&mut self, fqn: &str) -> Result<Vec<f32>, OnnxError> {
            Err(OnnxError::Program { what: fqn.into() })
        }
        fn read_i64(&mut self, fqn: &str) -> Result<Vec<i64>, OnnxError> {
            Err(OnnxError::Program { what: fqn.into() })
        }
    }

    /// `x.sum(0)` of an input of `sizes` (JSON sizes), its result of `out` sizes.
    fn sum_over_axis_0(sizes: &str, out: &str) -> ExportedProgram {
        let meta = |sizes: &str| {
            format!(
                r#"{{"dtype": 7, "sizes": {sizes}, "strides": [], "storage_offset": {{"as_int": 0}}, "device": {{"type": "cpu"}}, "layout": 0}}"#
            )
        };
        let json = format!(
            r#"{{"graph_module": {{
                "graph": {{
                  "inputs": [{{"as_tensor": {{"name": "x"}}}}],
                  "outputs": [{{"as_tensor": {{"name": "sum"}}}}],
                  "nodes": [{{"target": "torch.ops.aten.sum.dim_IntList",
                    "inputs": [{{"name": "self", "arg": {{"as_tensor": {{"name": "x"}}}}}},
                               {{"name": "dim", "arg": {{"as_ints": [0]}}}}],
                    "outputs": [{{"as_tensor": {{"name": "sum"}}}}]}}],
                  "tensor_values": {{"x": {}, "sum": {}}},
                  "sym_int_values": {{}}
                }},
                "signature": {{
                  "input_specs": [{{"user_input": {{"arg": {{"as_tensor": {{"name": "x"}}}}}}}}],
                  "output_specs": [{{"user_output": {{"arg": {{"as_tensor": {{"name": "sum"}}}}}}}}]
                }}
              }},
              "range_constraints": {{}}}}"#,
            meta(sizes),
            meta(out)
        );
        serde_json::from_str(&json).unwrap()
    }

    fn target(batch: Batch) -> lower::Target<'static> {
        lower::Target {
            opset: Opset::default(),
            batch,
            input_name: None,
            output_name: "output",
            fold_bn: true,
        }
    }

    #[test]
    fn a_static_program_reduces_along_axis_0_with_every_size_fixed() {
        let program = sum_over_axis_0(r#"[{"as_int": 3}, {"as_int": 4}]"#, r#"[{"as_int": 4}]"#);
        let lowered = lower::lower(&program, &mut NoTensors, &target(Batch::Static)).unwrap();
        let ops: Vec<&str> = lowered
            .model
            .graph
            .node
            .iter()
            .filter_map(|n| n.op_type.as_deref())
            .collect();
        assert!(ops.contains(&"ReduceSum"), "{ops:?}");
        assert_eq!(lowered.inputs, [("input".to_owned(), vec![3, 4])]);
        assert_eq!(lowered.outputs[0].batch_axis, None);
        assert_eq!(lowered.outputs[0].to_string(), "`output` [4]");
        atc::validate(&lowered.model, &Batch::Static).unwrap();
        // With a batch, the same program mixes samples.
        let err = lower::lower(&program, &mut NoTensors, &target(Batch::Fixed(3)))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("the batch"), "{err}");
    }

    #[test]
    fn a_declared_dynamic_dimension_is_refused_in_static_mode() {
        let batch = r#"{"as_expr": {"expr_str": "Symbol('s77', positive=True, integer=True)"}}"#;
        let program = sum_over_axis_0(
            &format!(r#"[{batch}, {{"as_int": 4}}]"#),
            r#"[{"as_int": 4}]"#,
        );
        let options = ProgramOptions {
            batch: Batch::Static,
            ..ProgramOptions::default()
        };
        let out = std::env::temp_dir().join("ckpt-static-refused.onnx");
        let err = export_with(&program, &mut NoTensors, &options, &out)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("declares the dynamic dimension s77") && err.contains("dynamic_shapes"),
            "{err}"
        );
        assert!(!out.exists());
    }

    #[test]
    fn stored_weights_are_computed_from_the_mapped_archive_as_the_file_is_written() {
        // The classifier fixture: convolutions with a BatchNorm each (their weights scaled
        // per output channel), then a Linear head (its weight as it is, under Gemm).
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pt2/classifier.pt2");
        let mut archive = Pt2Archive::open(&path).unwrap();
        let program = archive.program.clone();
        let target = lower::Target {
            opset: Opset::default(),
            batch: Batch::Dynamic("batch".into()),
            input_name: None,
            output_name: "output",
            fold_bn: true,
        };
        let lowered = lower::lower(&program, &mut archive, &target).unwrap();
        let deferred: Vec<&str> = lowered
            .model
            .initializers
            .iter()
            .filter(|i| matches!(i.bytes, Bytes::Deferred(_)))
            .map(|i| i.name.as_str())
            .collect();
        assert!(
            deferred.iter().any(|n| n.ends_with(".fused_bn")),
            "{deferred:?}"
        );
        assert!(deferred.contains(&"fc.weight"), "{deferred:?}");
    }
}
