//! `to-onnx` on TorchScript archives: the traced fixtures in `fixtures/script` (written by
//! `fixtures/script/generate.py` with torch 2.13, traced at batch 2) are exported and run in
//! tract at batch 1 and 3 from one file, against torch eager's outputs. Tolerance: max
//! |diff| ≤ 1e-4·max(1, max|ref|). The refused fixtures must fail saying where.

use std::path::{Path, PathBuf};

use ckpt::onnx::program::ProgramOptions;
use ckpt::onnx::script::{export_script, ScriptReport};
use ckpt::onnx::{Extent, OnnxError};
use ckpt::torch::script::ScriptArchive;
use ckpt::torch::script::{GivenInput, GivenSize};

mod common;
use common::{assert_batch_first_io, decode, op_types, Fixture};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/script")
}

fn case(name: &str) -> Fixture {
    Fixture::named(&fixtures(), name)
}

fn export(
    name: &str,
    input: Option<&[u64]>,
    options: &ProgramOptions,
    out: &Path,
) -> Result<ScriptReport, OnnxError> {
    let given: Vec<GivenInput> = input
        .map(|shape| GivenInput {
            name: None,
            shape: shape.iter().map(|&n| GivenSize::Fixed(n)).collect(),
            dtype: None,
        })
        .into_iter()
        .collect();
    let mut archive = ScriptArchive::open(&fixtures().join(format!("{name}.pt")))?;
    export_script(&mut archive, &given, options, out)
}

#[test]
fn traced_fixtures_match_torch_in_tract() {
    let dir = tempfile::tempdir().unwrap();
    for case in Fixture::all(&fixtures()) {
        for fold_bn in [true, false] {
            let out = dir.path().join(format!("{}.{fold_bn}.onnx", case.name));
            let options = ProgramOptions {
                fold_bn,
                ..ProgramOptions::default()
            };
            let report = export(&case.name, None, &options, &out).unwrap();
            assert_eq!(report.traced_batch, Some(2), "{}", case.name);
            if case.extra.is_empty() {
                assert_eq!(
                    report.program.inputs,
                    [("input".to_owned(), Extent::all_fixed(&case.input))]
                );
            } else {
                // Several inputs: named after the forward's parameters.
                let names: Vec<&str> = report
                    .program
                    .inputs
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect();
                assert_eq!(names, ["x", "k_value"], "{}", case.name);
            }
            // A dict's outputs are named after its keys, a tuple's numbered.
            let names: Vec<&str> = report
                .program
                .outputs
                .iter()
                .map(|o| o.name.as_str())
                .collect();
            let expected: &[&str] = match case.name.as_str() {
                "segmenter" => &["out", "aux"],
                "shuffle" => &["output_0", "output_1"],
                _ => &["output"],
            };
            assert_eq!(names, expected);
            // The reductions and indexing zoos, the transformer encoder, the constant
            // tensors and the folded windows have no BatchNorm; every other fixture has.
            let has_bn = !matches!(
                case.name.as_str(),
                "zoo_reductions"
                    | "zoo_indexing"
                    | "encoder"
                    | "constant_tensors"
                    | "folded_windows"
            );
            assert_eq!(
                op_types(&decode(&out)).contains(&"BatchNormalization".to_string()),
                has_bn && !fold_bn,
                "{}",
                case.name
            );
            case.assert_parity(&out, if fold_bn { "folded" } else { "unfolded" });
        }
    }
}

#[test]
fn the_unet_is_atc_shaped() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("unet.onnx");
    // The traced shape, given explicitly, is accepted.
    export(
        "tiny_unet",
        Some(&[3, 16, 16]),
        &ProgramOptions::default(),
        &out,
    )
    .unwrap();
    let model = decode(&out);
    assert_eq!(model.ir_version, Some(6));
    assert_eq!(model.opset_import.len(), 1);
    assert_eq!(model.opset_import[0].version, Some(11));
    assert_batch_first_io(&model);
    let graph = model.graph.unwrap();
    let ops: Vec<&str> = graph
        .node
        .iter()
        .filter_map(|n| n.op_type.as_deref())
        .collect();
    assert_eq!(ops.iter().filter(|o| **o == "Resize").count(), 3);
    assert!(ops.contains(&"ConvTranspose") && ops.contains(&"Sigmoid"));
    for banned in [
        "Shape",
        "Gather",
        "Unsqueeze",
        "Identity",
        "BatchNormalization",
    ] {
        assert!(!ops.contains(&banned), "{banned} in {ops:?}");
    }
    let names: Vec<&str> = graph
        .initializer
        .iter()
        .filter_map(|t| t.name.as_deref())
        .collect();
    assert!(
        names.contains(&"head.weight") && names.contains(&"up.weight"),
        "{names:?}"
    );
}

#[test]
fn refusals_say_where() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.onnx");
    let options = ProgramOptions::default();
    let err = export("narrow_cnn", Some(&[3, 32, 32]), &options, &out)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("differs from the traced input's per-sample shape [3, 16, 16]"),
        "{err}"
    );

    // `torch.hardshrink` was the fixture's unsupported op; it is lowered now.
    export("unsupported_hardshrink", None, &options, &out).expect("hardshrink exports");
    std::fs::remove_file(&out).unwrap();

    // The fused encoder layer is exported (the `encoder` case); with a mask the graph
    // builds from a buffer (its view and its expand to the batch and heads are read) it is
    // not.
    let err = export("masked_attention", None, &options, &out)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("torch.ops.aten._transformer_encoder_layer_fwd.default): a fused encoder layer with an attention mask is not exported")
            && err.contains(r#"File "code/__torch__/torch/nn/modules/transformer/___torch_mangle_180.py", line 49"#),
        "{err}"
    );

    let err = export("folds_batch", None, &options, &out)
        .unwrap_err()
        .to_string();
    // The trace's `reshape(-1)` folds the batch into the one output dimension: the
    // lowering places it and refuses the output, naming it.
    assert!(
        err.contains(
            "the program's output `reshape_2`: its sizes [32·N] fold the batch into a dimension"
        ),
        "{err}"
    );

    let scripted = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/ts_scripted.pt");
    let mut archive = ScriptArchive::open(&scripted).expect("the archive opens");
    let err = export_script(&mut archive, &[], &options, &out)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "`code/__torch__.py` line 15: `if`: scripted control flow is not supported"
        ),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn hostile_code_fails_fast() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.onnx");
    // `forward` calls itself: refused at the nesting bound, not by a stack overflow.
    let start = std::time::Instant::now();
    let err = export("hostile_recursion", None, &ProgramOptions::default(), &out)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("`code/__torch__/models.py` line 10: ") && err.contains("nest deeper than"),
        "{err}"
    );
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
}

#[test]
fn without_traced_inputs_the_shape_must_be_given() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bare.onnx");
    let options = ProgramOptions::default();
    let err = export("tiny_unet_no_inputs", None, &options, &out)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no `traced_inputs.pkl`") && err.contains("pass --input-shape C,H,W"),
        "{err}"
    );
    let report = export("tiny_unet_no_inputs", Some(&[3, 16, 16]), &options, &out).unwrap();
    assert_eq!(report.traced_batch, None);
    let case = case("tiny_unet");
    case.assert_parity(&out, "no traced inputs");
}

#[test]
fn other_opsets() {
    let dir = tempfile::tempdir().unwrap();
    let case = case("narrow_cnn");
    for version in [9, 13] {
        let out = dir.path().join(format!("cnn{version}.onnx"));
        let options = ProgramOptions {
            opset: ckpt::onnx::Opset::new(version).unwrap(),
            ..ProgramOptions::default()
        };
        export("narrow_cnn", None, &options, &out).unwrap();
        case.assert_parity(&out, &format!("opset {version}"));
    }
    let options = ProgramOptions {
        opset: ckpt::onnx::Opset::new(9).unwrap(),
        ..ProgramOptions::default()
    };
    let err = export("tiny_unet", None, &options, &dir.path().join("u.onnx"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("needs Resize from opset 11"), "{err}");
}
