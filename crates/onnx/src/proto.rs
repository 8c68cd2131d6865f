//! The ONNX protobuf messages, generated at build time from `proto/onnx.proto`.
#![allow(clippy::all, missing_docs)]

include!(concat!(env!("OUT_DIR"), "/onnx.rs"));
