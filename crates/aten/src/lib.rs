//! The aten program layer: what both importers of users' own models produce and the ONNX
//! lowering consumes.
//!
//! - [`program`]: the program format, torch.export's serialized `ExportedProgram` (the
//!   `.pt2` importer reads it as is; the TorchScript importer builds one).
//! - [`schema`]: every op's argument names, declared once.
//! - [`args`]: reading a node's arguments by those names, with the schema's defaults.
//! - [`shape`]: each op's output sizes from its inputs' sizes and its arguments, per
//!   sample (the batch kept first), without building values.
//! - [`inline`]: replacing higher-order ops (an autocast-off region) by their bodies.
//! - [`sym`], [`specialize`]: symbolic sizes, and a program with some of them fixed.
//! - [`rows`]: matrix products over rows a view merged (GPT-2's `Conv1D`) written over the
//!   unmerged tensor, where the merged size is a product of symbols.
//! - [`shuffle`]: `pixel_shuffle`/`pixel_unshuffle` and `channel_shuffle` as a reshape, a
//!   permutation, a reshape.
//! - [`diag`]: `diag_embed` as torch's reference computes it.
//! - [`distance`]: the distances of `cdist` and `pdist`, as torch's kernels take them.
//! - [`dim`]: a dimension argument wrapped as torch wraps it (a 0-d tensor has a
//!   dimension 0).
//! - [`gradient`]: `torch.gradient` at scalar spacings, as torch's differences.
//! - [`histogram`]: `torch.histc`'s bins, as torch's kernel counts.
//! - [`fractional`]: the windows of `fractional_max_pool2d`/`3d` from their random
//!   samples, as torch's kernel places them, and the pool the evaluator computes.
//! - [`nonzero`]: the coordinates `nonzero_static` returns, as torch's kernel lists them.
//! - [`order`]: the order statistics (`median`, `quantile` and their NaN-skipping forms)
//!   as torch's `quantile_compute` ranks and reads the sorted values.
//! - [`matrix_norm`]: the matrix norms torch computes without singular values, and which
//!   norm `linalg_norm` is.
//! - [`decompose`]: torch's decompositions of element-wise ops, ported as data, which the
//!   evaluator and the ONNX lowering both compute.
//! - [`series`]: element-wise programs written once over an algebra (Horner, Chebyshev,
//!   rational pieces chosen by `Where`), computed on numbers or written as ONNX nodes.
//! - [`special`]: torch's special functions (`digamma`, `lgamma`, `polygamma`, `erfinv`,
//!   Bessel functions, …) as such programs, following torch's kernels.
//! - [`combine`]: the index tuples of `cartesian_prod`.
//! - [`search`]: `searchsorted` as torch's binary search steps through the sorted axis.
//! - [`spaced`]: the points of `linspace`/`logspace` as torch's kernel places them.
//! - [`scatter`]: the writes of `scatter`, `index_put` and the `*_scatter` ops, as torch's
//!   kernels order them, which the evaluator folds and the ONNX lowering writes as Gathers.
//! - [`refused`]: why an op with no lowering is refused, its class from torch's tags.
//! - [`expand`]: compound ops (recurrent cells, `bilinear`, `cross`, `block_diag`, …)
//!   written as the aten ops torch computes them by, for the lowering to lower one by one.
//! - [`eval`]: evaluating ops whose inputs are all constants (parameters, buffers,
//!   literals), so the export writes their results as initializers.
//!
//! The crate is the workspace's own, not an API: its modules are public for the importers
//! and the ONNX lowering above it, and hidden from the documentation.

#![warn(missing_docs)]

#[doc(hidden)]
pub mod alias;
#[doc(hidden)]
pub mod args;
#[doc(hidden)]
pub mod bags;
#[doc(hidden)]
pub mod combine;
#[doc(hidden)]
pub mod decompose;
#[doc(hidden)]
pub mod diag;
#[doc(hidden)]
pub mod dim;
#[doc(hidden)]
pub mod distance;
#[doc(hidden)]
pub mod eval;
#[doc(hidden)]
pub mod expand;
#[doc(hidden)]
pub mod fourier;
#[doc(hidden)]
pub mod fractional;
#[doc(hidden)]
pub mod gradient;
#[doc(hidden)]
pub mod grid_sample;
#[doc(hidden)]
pub mod histogram;
#[doc(hidden)]
pub mod inline;
#[doc(hidden)]
pub mod linalg;
#[doc(hidden)]
pub mod matrix_norm;
#[doc(hidden)]
pub mod nonzero;
#[doc(hidden)]
pub mod order;
#[doc(hidden)]
pub mod program;
#[doc(hidden)]
pub mod refused;
#[doc(hidden)]
pub mod rows;
#[doc(hidden)]
pub mod scatter;
#[doc(hidden)]
pub mod schema;
#[doc(hidden)]
pub mod search;
#[doc(hidden)]
pub mod segment;
#[doc(hidden)]
pub mod series;
#[doc(hidden)]
pub mod shape;
#[doc(hidden)]
pub mod shuffle;
#[doc(hidden)]
pub mod solve;
#[doc(hidden)]
pub mod spaced;
#[doc(hidden)]
pub mod special;
#[doc(hidden)]
pub mod specialize;
#[doc(hidden)]
pub mod spectrum;
#[doc(hidden)]
pub mod sym;
