//! `torch.export.save` archives (`.pt2`) of every layout and schema generation:
//!
//! * the archive layout (torch ≥ 2.8): a zip (any archive folder) holding the serialized
//!   program (`models/model.json`), weight and constant configs
//!   (`data/weights/model_weights_config.json`, `data/constants/model_constants_config.json`)
//!   and raw, unpickled storage records (`data/weights/weight_<i>`, `data/constants/tensor_<i>`);
//! * the flat layout (torch 2.1–2.7, [`flat`]): the program and `torch.save` archives of the
//!   state dict and constants at the zip root.
//!
//! [`Pt2Archive::open`] parses the program, mapping its schema generation onto the current
//! one ([`generations`]), finds every stored tensor and checks that it fits in its record;
//! [`Pt2Archive::read_f32`] reads one tensor by its FQN.

mod archive;
pub mod flat;
pub mod generations;
mod sympy_str;

pub use archive::{Pt2Archive, StoredTensor, TensorLayout, MAX_JSON_BYTES};
pub use ckpt_formats::torch::pt2_layout::{is_pt2, Layout, Pt2Error};
pub use generations::SchemaVersion;
