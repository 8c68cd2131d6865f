//! `to-onnx` on a TorchScript archive made by `torch.jit.trace`: the archive's code is read
//! as an aten program ([`ckpt_import::script`]) and lowered by the same code as a `.pt2`
//! program ([`super::program`]), under the same ATC rules.

use std::collections::HashMap;
use std::path::Path;

use ckpt_aten::program::{ExportedProgram, SymInt};
use ckpt_aten::rows::unmerge_row_products_where;
use ckpt_aten::specialize::specialize;
use ckpt_aten::sym::symbols;
use ckpt_formats::torch::checkpoint::Checkpoint;
use ckpt_formats::torch::read_tensor::{self, MappedTensor};
use ckpt_formats::torch::tensor::TensorRef;
use ckpt_formats::torch::{DType, TorchError};
use ckpt_import::script::archive::{constant_tensor, Constant, ConstantTensor, ConstantValues};
use ckpt_import::script::convert::{convert_at, BATCH};
use ckpt_import::script::{convert, ScriptArchive};
use ckpt_import::script::{GivenInput, GivenSize};

use super::program::dynamic::{sizes_lowered, DynamicDim, Sizes};
use super::program::{export_dynamic, export_with, ProgramOptions, ProgramReport, TensorSource};
use super::{Batch, OnnxError};

/// What a TorchScript export did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptReport {
    /// The export of the converted program.
    pub program: ProgramReport,
    /// The example's batch size, when the archive records it (`traced_inputs.pkl`).
    pub traced_batch: Option<u64>,
}

/// The parameters and buffers the program reads, from `data.pkl`, and the non-scalar
/// tensor constants, from `constants.pkl`.
struct ScriptTensors<'a> {
    ckpt: &'a mut Checkpoint,
    tensors: &'a HashMap<String, TensorRef>,
    constants: &'a [Constant],
}

/// Where a tensor the program reads is.
enum Found<'t> {
    Stored(&'t TensorRef),
    Constant(&'t ConstantTensor),
}

impl ScriptTensors<'_> {
    fn get(&self, fqn: &str) -> Result<Found<'_>, OnnxError> {
        if let Some(t) = constant_tensor(self.constants, fqn) {
            return Ok(Found::Constant(t));
        }
        self.tensors
            .get(fqn)
            .map(Found::Stored)
            .ok_or_else(|| OnnxError::Program {
                what: format!("the program reads `{fqn}`, which the module objects do not hold"),
            })
    }
}

impl TensorSource for ScriptTensors<'_> {
    fn dims(&self, fqn: &str) -> Result<Vec<u64>, OnnxError> {
        Ok(match self.get(fqn)? {
            Found::Stored(t) => t.shape.clone(),
            Found::Constant(t) => t.shape.clone(),
        })
    }

    fn dtype(&self, fqn: &str) -> Result<DType, OnnxError> {
        Ok(match self.get(fqn)? {
            Found::Stored(t) => t.dtype,
            Found::Constant(t) => t.dtype,
        })
    }

    fn read_f32(&mut self, fqn: &str) -> Result<Vec<f32>, OnnxError> {
        let tensor = match self.get(fqn)? {
            Found::Stored(t) => t.clone(),
            Found::Constant(t) => {
                return match &t.values {
                    ConstantValues::Float(v) => Ok(v.clone()),
                    ConstantValues::Int(v) => Ok(v.iter().map(|&i| i as f32).collect()),
                }
            }
        };
        read_tensor::read_f32(self.ckpt, &tensor).map_err(|e| read_error(fqn, e))
    }

    fn read_i64(&mut self, fqn: &str) -> Result<Vec<i64>, OnnxError> {
        let tensor = match self.get(fqn)? {
            Found::Stored(t) => t.clone(),
            Found::Constant(t) => {
                return match &t.values {
                    ConstantValues::Int(v) => Ok(v.clone()),
                    ConstantValues::Float(_) => Err(read_error(
                        fqn,
                        TorchError::Unsupported {
                            what: format!("reading {} tensors as integers", t.dtype.name()),
                        },
                    )),
                }
            }
        };
        read_tensor::read_i64(self.ckpt, &tensor).map_err(|e| read_error(fqn, e))
    }

    fn mapped(&self, fqn: &str) -> Option<MappedTensor> {
        match self.get(fqn).ok()? {
            Found::Stored(t) => read_tensor::map_tensor(self.ckpt, t).ok().flatten(),
            Found::Constant(_) => None,
        }
    }
}

/// The converted `program` at the sizes the trace recorded (`--batch static`): its batch
/// symbol fixed at the traced batch size, which the archive must record.
fn at_traced_sizes(
    program: &ExportedProgram,
    traced_batch: Option<u64>,
) -> Result<ExportedProgram, OnnxError> {
    let batch = traced_batch.ok_or_else(|| OnnxError::Option {
        what: "--batch static exports a trace at the sizes it recorded, but the archive records no example input (traced_inputs.pkl); use --batch N with --input-shape".into(),
    })?;
    let name = symbols(BATCH).into_iter().next().unwrap_or_default();
    let values = HashMap::from([(name, batch as i64)]);
    specialize(program, &values).map_err(|what| OnnxError::Program {
        what: format!("at the traced batch size {batch}: {what}"),
    })
}

fn read_error(fqn: &str, e: TorchError) -> OnnxError {
    OnnxError::Program {
        what: format!("tensor `{fqn}`: {e}"),
    }
}

/// Exports the traced model in the TorchScript `archive` to `out`. `given` are the inputs'
/// per-sample shapes (and dtypes): required when the archive has no `traced_inputs.pkl`, and
/// checked against it otherwise.
pub fn export_script(
    archive: &mut ScriptArchive,
    given: &[GivenInput],
    options: &ProgramOptions,
    out: &Path,
) -> Result<ScriptReport, OnnxError> {
    let dims = dynamic_dims(given)?;
    if !dims.is_empty() {
        return export_dynamic_script(archive, given, &dims, options, out);
    }
    let mut converted = convert(archive, given)?;
    if options.batch == Batch::Static {
        converted.program = at_traced_sizes(&converted.program, converted.traced_batch)?;
    }
    let mut tensors = ScriptTensors {
        ckpt: &mut archive.ckpt,
        tensors: &converted.tensors,
        constants: &archive.constants,
    };
    let program = export_with(&converted.program, &mut tensors, options, out)?;
    Ok(ScriptReport {
        program,
        traced_batch: converted.traced_batch,
    })
}

/// The dynamic dimensions `given` names, each once: inputs that name one symbol share its
/// size, and must agree on its maximum.
fn dynamic_dims(given: &[GivenInput]) -> Result<Vec<DynamicDim>, OnnxError> {
    let mut dims: Vec<DynamicDim> = Vec::new();
    for size in given.iter().flat_map(|g| &g.shape) {
        let GivenSize::Dynamic { symbol, max } = size else {
            continue;
        };
        match dims.iter().find(|d| &d.symbol == symbol) {
            Some(seen) if seen.max != *max => {
                return Err(OnnxError::Option {
                    what: format!(
                    "--input-shape gives the dynamic dimension `{symbol}` two maximums ({} and {})",
                    seen.max.map_or("none".into(), |m| m.to_string()),
                    max.map_or("none".into(), |m| m.to_string()),
                ),
                })
            }
            Some(_) => {}
            None => dims.push(DynamicDim {
                symbol: symbol.clone(),
                min: 1,
                max: *max,
            }),
        }
    }
    Ok(dims)
}

/// A trace exported with dynamic dimensions besides the batch: converted once at each set
/// of sizes the lowering compares ([`sizes_lowered`]), so that a size the trace baked in
/// shows as a difference between the programs (refused) rather than as a wrong graph.
fn export_dynamic_script(
    archive: &mut ScriptArchive,
    given: &[GivenInput],
    dims: &[DynamicDim],
    options: &ProgramOptions,
    out: &Path,
) -> Result<ScriptReport, OnnxError> {
    if options.batch == Batch::Static {
        return Err(OnnxError::Option {
            what: format!(
                "--batch static exports every size as the trace recorded it, but --input-shape names the dynamic dimension {}",
                dims[0].symbol
            ),
        });
    }
    let mut converted = Vec::new();
    for sizes in sizes_lowered(dims)? {
        let values: HashMap<String, u64> =
            sizes.iter().map(|(s, &v)| (s.clone(), v as u64)).collect();
        let at = convert_at(archive, given, &values).map_err(|e| e.to_string());
        converted.push((sizes, at));
    }
    let Some((_, Ok(base))) = converted.first() else {
        let what = match converted.into_iter().next() {
            Some((sizes, Err(e))) => format!("converted with {}: {e}", shown(&sizes)),
            _ => "no sizes to convert at".into(),
        };
        return Err(OnnxError::Program { what });
    };
    let (tensors, traced_batch, program_nodes) = (
        base.tensors.clone(),
        base.traced_batch,
        base.program.graph_module.graph.nodes.len(),
    );
    let program_at = |sizes: &Sizes| -> Result<ExportedProgram, OnnxError> {
        let (_, at) =
            converted
                .iter()
                .find(|(s, _)| s == sizes)
                .ok_or_else(|| OnnxError::Program {
                    what: format!("the trace was not converted at the sizes {sizes:?}"),
                })?;
        let mut program = at
            .as_ref()
            .map_err(|what| OnnxError::Program {
                what: format!("converted with {}: {what}", shown(sizes)),
            })?
            .program
            .clone();
        unmerge_row_products_where(&mut program.graph_module.graph, |size| {
            matches!(size, SymInt::Expr(_))
        });
        Ok(program)
    };
    let mut source = ScriptTensors {
        ckpt: &mut archive.ckpt,
        tensors: &tensors,
        constants: &archive.constants,
    };
    let program = export_dynamic(&program_at, dims, program_nodes, &mut source, options, out)?;
    Ok(ScriptReport {
        program,
        traced_batch,
    })
}

/// Sizes by symbol as a user reads them (`seq=7`).
fn shown(sizes: &Sizes) -> String {
    let mut each: Vec<String> = sizes.iter().map(|(s, v)| format!("{s}={v}")).collect();
    each.sort();
    each.join(", ")
}
