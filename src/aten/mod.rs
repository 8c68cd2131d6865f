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
//! - [`decompose`]: torch's decompositions of element-wise ops, ported as data, which the
//!   evaluator and the ONNX lowering both compute.
//! - [`series`]: element-wise programs written once over an algebra (Horner, Chebyshev,
//!   rational pieces chosen by `Where`), computed on numbers or written as ONNX nodes.
//! - [`special`]: torch's special functions (`digamma`, `lgamma`, `polygamma`, `erfinv`,
//!   Bessel functions, …) as such programs, following torch's kernels.
//! - [`refused`]: why an op with no lowering is refused, its class from torch's tags.
//! - [`eval`]: evaluating ops whose inputs are all constants (parameters, buffers,
//!   literals), so the export writes their results as initializers.

pub mod args;
pub mod decompose;
pub mod diag;
pub mod eval;
pub mod fourier;
pub mod inline;
pub mod program;
pub mod refused;
pub mod rows;
pub mod schema;
pub mod series;
pub mod shape;
pub mod shuffle;
pub mod special;
pub mod specialize;
pub mod sym;

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every `crate::` path in `text` that leaves the aten layer, as `line: text`.
    fn outside_paths(text: &str) -> Vec<String> {
        text.lines()
            .enumerate()
            .filter(|(_, line)| {
                line.match_indices("crate::").any(|(at, _)| {
                    let rest = &line[at + "crate::".len()..];
                    let names_a_path =
                        rest.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '{');
                    names_a_path && !rest.starts_with("aten")
                })
            })
            .map(|(n, line)| format!("{}: {}", n + 1, line.trim()))
            .collect()
    }

    /// The `.rs` files under `dir`, recursively.
    fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src/aten is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The aten layer sits above the importers and the lowering: nothing under `src/aten`
    /// names another module of the crate (the importers in `torch`, the lowering in
    /// `onnx`, …), so the importers and the lowering can use it without a loop.
    #[test]
    fn the_aten_layer_names_no_module_outside_it() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/aten");
        let mut files = Vec::new();
        sources(&root, &mut files);
        assert!(
            files.len() > 20,
            "only {} files under {root:?}",
            files.len()
        );
        let found: Vec<String> = files
            .iter()
            .flat_map(|f| {
                let text = std::fs::read_to_string(f).expect("a source file is readable");
                outside_paths(&text)
                    .into_iter()
                    .map(move |hit| format!("{}:{hit}", f.display()))
            })
            .collect();
        assert!(found.is_empty(), "{}", found.join("\n"));
    }

    #[test]
    fn a_path_into_another_layer_is_found() {
        // Spelled in pieces, so this file does not name what it looks for.
        let torch = concat!("crate", "::torch::script::f();");
        assert_eq!(
            outside_paths(&format!("use crate::aten::args;\n  x = {torch}")),
            [format!("2: x = {torch}")]
        );
        assert_eq!(
            outside_paths(concat!("use crate", "::{aten, onnx};")).len(),
            1
        );
    }
}
