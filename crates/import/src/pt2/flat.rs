//! The flat `.pt2` layout: what `torch.export.save` wrote through Python's `zipfile` from
//! torch 2.1 to 2.7 (`torch/export/__init__.py`, and `torch/_export/__init__.py` in 2.1).
//! Its records sit at the zip root:
//!
//! * `version`: the schema version (`1`, `5.1`, `8.7`);
//! * `serialized_exported_program.json`: the program;
//! * `serialized_state_dict.pt` (`.json` in torch 2.1, whose bytes are the same kind): the
//!   parameters and buffers, `torch.save`d into a torch zip stored as a record;
//! * `serialized_constants.pt` (torch 2.3 on): the lifted tensor constants, likewise;
//! * `serialized_example_inputs.pt` (torch 2.5 on) and `extra_files/…`, which a program
//!   does not need.
//!
//! torch's loader recognises the layout by the `version` record at the root and reads the
//! records by these names; it unpickles the state dict, constants and example inputs with
//! `torch.load` (torch 2.1–2.4 without `weights_only`), which is why the scanner reads
//! every pickle of every nested archive. Here the two tensor pickles are read by the
//! non-executing reader ([`pickled_tensors`], also for the archive layout of torch 2.8,
//! which kept these `torch.save` archives as `data/weights/model.pt` and
//! `data/constants/model.pt`): each is a mapping from name to tensor.

use ckpt_formats::torch::checkpoint::MAX_PICKLE_BYTES;
use ckpt_formats::torch::tensor::{scan, TensorRef};
use ckpt_formats::torch::zip_read::TorchZip;
use ckpt_pickle as pickle;

use super::archive::TensorLayout;
use super::Pt2Error;

pub use ckpt_formats::torch::pt2_layout::{is_flat, PROGRAM, VERSION};
/// The state dict's record, by the names torch's loader accepts.
pub const STATE_DICT: [&str; 2] = ["serialized_state_dict.pt", "serialized_state_dict.json"];
/// The lifted constants' record, by the names torch's loader accepts.
pub const CONSTANTS: [&str; 2] = ["serialized_constants.pt", "serialized_constants.json"];

/// The first of `names` the archive holds.
pub fn find<'a>(zip: &TorchZip, names: &[&'a str]) -> Option<&'a str> {
    names.iter().copied().find(|name| zip.has(name))
}

/// One entry of a pickled tensor mapping: its name and its view of a record of the nested
/// archive, or `None` for a value that is not a plain tensor (a subclass, an object).
pub type PickledEntry = (String, Option<(String, TensorLayout)>);

/// The entries of the mapping pickled in `nested` (a `torch.save` archive, record `outer`
/// of the `.pt2`): name → tensor view of `data/<key>`.
pub fn pickled_tensors(nested: &mut TorchZip, outer: &str) -> Result<Vec<PickledEntry>, Pt2Error> {
    let bad = |what: String| Pt2Error::Record {
        record: outer.to_owned(),
        what,
    };
    let bytes = nested.read_small("data.pkl", MAX_PICKLE_BYTES)?;
    let mut pickle = pickle::read(&bytes).map_err(|e| bad(format!("its pickle: {e}")))?;
    pickle.graph.fold_mapping_constructors();
    let graph = &pickle.graph;
    let found = scan(graph, pickle.root).map_err(|e| bad(format!("its pickle: {e}")))?;
    let pairs = graph.mapping(pickle.root).ok_or_else(|| {
        bad(format!(
            "holds a {}, not a mapping of tensors",
            graph.get(pickle.root).kind()
        ))
    })?;
    let mut entries = Vec::with_capacity(pairs.len());
    for &(key, value) in pairs {
        let name = graph
            .str(key)
            .ok_or_else(|| bad("a key of its mapping is not a string".into()))?
            .to_owned();
        // A parameter is `_rebuild_parameter` over the tensor.
        let node = found.parameters.get(&value).copied().unwrap_or(value);
        let tensor = found
            .tensor_at(node)
            .map(|t| layout(t).map(|l| (format!("data/{}", t.storage.key), l)))
            .transpose()
            .map_err(|what| Pt2Error::Tensor {
                name: name.clone(),
                what,
            })?;
        entries.push((name, tensor));
    }
    Ok(entries)
}

/// A pickled tensor's view as a [`TensorLayout`] (negative strides are refused).
fn layout(tensor: &TensorRef) -> Result<TensorLayout, String> {
    let strides = tensor
        .stride
        .iter()
        .map(|&s| u64::try_from(s).map_err(|_| format!("negative stride {s}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TensorLayout {
        dtype: tensor.dtype,
        sizes: tensor.shape.clone(),
        strides,
        offset: tensor.offset,
    })
}
