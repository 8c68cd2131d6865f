//! What `ckpt inspect` reports about a checkpoint: [`InspectReport`], built by [`inspect`],
//! serialized as the JSON of `ckpt inspect --json` and rendered as text by [`render_text`];
//! about a `.pt2` archive: [`pt2`].
//!
//! The JSON fields are documented in the user guide (`docs/guide.md`); the text view is
//! rendered from the same report, so the two never disagree. JSON has no spelling for some
//! Python values, so they are given as strings: NaN and infinities as `"nan"`, `"inf"`,
//! `"-inf"` ([`PyFloat`]); integers beyond 64 bits as their decimal digits; bytes as a `b'…'`
//! preview (with the length alongside in [`InspectReport::keys`]).

mod build;
mod folder;
mod model;
pub mod pt2;
mod text;

pub use build::inspect;
pub use folder::{
    dcp, deepspeed, render_dcp, render_deepspeed, ChunkReport, DcpEntry, DcpReport, DeepSpeedEntry,
    DeepSpeedReport, FileReport,
};
pub use model::{
    AmpReport, AmpSettings, ApexScalerReport, ArchiveReport, InspectReport, KeyMap, PyFloat,
    Scalar, ScanVerdict, StateDictReport, StructureNode,
};
pub use text::render_text;
