//! `to-onnx` on `torch.export` archives: exports the `.pt2` fixtures in `fixtures/pt2`
//! (written by `fixtures/pt2/generate.py` with real torch 2.13) and runs them in tract-onnx
//! at batch 1 and 3 from one file, against torch eager's outputs. Tolerance: max |diff| ≤
//! 1e-4·max(1, max|ref|). Also checks the refusals (a node that freezes the batch, an
//! unsupported op) name the node, and the CLI routing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use ckpt::onnx::program::{export_program, BatchDim, OutputShape, ProgramOptions, ProgramReport};
use ckpt::onnx::proto::{tensor_shape_proto::dimension::Value as Dim, type_proto};
use ckpt::onnx::{Batch, Extent, OnnxError, Opset};
use ckpt::torch::pt2::{is_pt2, Pt2Archive};

mod common;
use common::{assert_batch_first_io, decode, first_dim, op_types, Fixture};
#[path = "common/cli.rs"]
mod cli;
use cli::{inspect_json, inspect_text};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pt2")
}

fn case(name: &str) -> Fixture {
    Fixture::named(&fixtures(), name)
}

fn export_case(
    case: &Fixture,
    options: &ProgramOptions,
    out: &Path,
) -> Result<ProgramReport, OnnxError> {
    let mut archive = Pt2Archive::open(&fixtures().join(format!("{}.pt2", case.name)))?;
    export_program(&mut archive, options, out)
}

/// A raw little-endian float32 file written by a fixture generator.
fn read_f32(path: &Path) -> Vec<f32> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn programs_match_torch_in_tract_at_every_opset_that_has_resize() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "classifier",
        "unet",
        "tokens",
        "mixer",
        "shuffle",
        "segmenter",
        "attention",
    ] {
        let case = case(name);
        for (opset, fold_bn) in [(11, true), (13, true), (11, false)] {
            let options = ProgramOptions {
                opset: Opset::new(opset).unwrap(),
                fold_bn,
                ..ProgramOptions::default()
            };
            let out = dir.path().join(format!("{name}-{opset}-{fold_bn}.onnx"));
            let report = export_case(&case, &options, &out).unwrap();
            assert_eq!(
                report.inputs,
                [("input".to_owned(), Extent::all_fixed(&case.input))]
            );
            assert_eq!(
                matches!(report.batch, BatchDim::Symbol(_)),
                case.entry["dynamic"].as_bool().unwrap()
            );
            let ops = op_types(&decode(&out));
            let has_bn = !matches!(name, "tokens" | "mixer" | "attention");
            assert_eq!(
                report
                    .outputs
                    .iter()
                    .map(|o| o.name.as_str())
                    .collect::<Vec<_>>(),
                expected_outputs(name),
            );
            assert_eq!(
                ops.iter().any(|o| o == "BatchNormalization"),
                has_bn && !fold_bn,
                "{name}: {ops:?}"
            );
            case.assert_parity(&out, &format!("opset {opset}, fold {fold_bn}"));
        }
    }
}

/// The ONNX output names: a dict's keys, a tuple's `output_<k>`, else `output`.
fn expected_outputs(name: &str) -> Vec<&'static str> {
    match name {
        "segmenter" => vec!["out", "aux"],
        "shuffle" => vec!["output_0", "output_1"],
        _ => vec!["output"],
    }
}

#[test]
fn splits_are_split_nodes_and_dilations_reach_the_convs() {
    let dir = tempfile::tempdir().unwrap();
    for opset in [11, 13] {
        let out = dir.path().join(format!("shuffle-{opset}.onnx"));
        let options = ProgramOptions {
            opset: Opset::new(opset).unwrap(),
            output_name: "y".into(),
            ..ProgramOptions::default()
        };
        let report = export_case(&case("shuffle"), &options, &out).unwrap();
        assert_eq!(
            report.outputs,
            [
                OutputShape {
                    name: "y_0".to_owned(),
                    batch_axis: Some(0),
                    sizes: Extent::all_fixed(&[3, 8, 8])
                },
                OutputShape {
                    name: "y_1".to_owned(),
                    batch_axis: Some(0),
                    sizes: Extent::all_fixed(&[3, 8])
                }
            ]
        );
        let model = decode(&out);
        let splits: Vec<_> = model
            .graph
            .as_ref()
            .unwrap()
            .node
            .iter()
            .filter(|n| n.op_type.as_deref() == Some("Split"))
            .collect();
        // chunk, split_with_sizes and unbind.
        assert_eq!(splits.len(), 3);
        for split in splits {
            let attribute = split
                .attribute
                .iter()
                .any(|a| a.name.as_deref() == Some("split"));
            // Sizes are an attribute before opset 13, the second input from 13 on.
            assert_eq!(attribute, opset < 13, "opset {opset}");
            assert_eq!(split.input.len(), if opset < 13 { 1 } else { 2 });
        }
    }
    let out = dir.path().join("segmenter.onnx");
    export_case(&case("segmenter"), &ProgramOptions::default(), &out).unwrap();
    let model = decode(&out);
    let dilations: Vec<Vec<i64>> = model
        .graph
        .as_ref()
        .unwrap()
        .node
        .iter()
        .filter(|n| n.op_type.as_deref() == Some("Conv"))
        .filter_map(|n| {
            n.attribute
                .iter()
                .find(|a| a.name.as_deref() == Some("dilations"))
        })
        .map(|a| a.ints.clone())
        .filter(|d| d != &[1, 1])
        .collect();
    assert_eq!(dilations, [vec![2, 2], vec![2, 3]]);
}

/// The op zoo (element-wise math, activations, folded constants; padding, group and
/// instance norm, reductions; strided slices, narrow, index_select) and the two-input RootNet head, in tract at opsets 11 and 13.
#[test]
fn op_zoo_and_multi_input_programs_match_torch_in_tract() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "zoo_elementwise",
        "zoo_reductions",
        "zoo_indexing",
        "zoo_overloads",
        "rootnet",
    ] {
        let case = case(name);
        for opset in [11, 13] {
            let options = ProgramOptions {
                opset: Opset::new(opset).unwrap(),
                ..ProgramOptions::default()
            };
            let out = dir.path().join(format!("{name}-{opset}.onnx"));
            let report = export_case(&case, &options, &out).unwrap();
            let model = decode(&out);
            let ops = op_types(&model);
            for shape_op in [
                "Shape",
                "Gather",
                "Range",
                "ConstantOfShape",
                "BatchNormalization",
            ] {
                assert!(!ops.iter().any(|o| o == shape_op), "{name}: {ops:?}");
            }
            case.assert_parity(&out, &format!("opset {opset}"));
            if name == "rootnet" {
                // ONNX inputs named after forward's parameters, both with the batch.
                let names: Vec<&str> = report.inputs.iter().map(|(n, _)| n.as_str()).collect();
                assert_eq!(names, ["x", "k_value"]);
                assert_eq!(report.inputs[1].1, [Extent::Fixed(1)]);
                for input in &model.graph.as_ref().unwrap().input {
                    assert_eq!(first_dim(input), Some(Dim::DimParam("batch".into())));
                }
            }
        }
    }
    // One name cannot name two inputs.
    let options = ProgramOptions {
        input_name: Some("image".into()),
        ..ProgramOptions::default()
    };
    let err = export_case(&case("rootnet"), &options, &dir.path().join("n.onnx"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("the model takes 2 (x, k_value)"), "{err}");
}

/// Swin windows (the batch folded into the windows, moved by the qkv permute) and
/// MobileViT patches (B·32 rows, then B·4 patches): static Transposes and Reshapes whose
/// one batch entry is `-1` or `0`, nothing that computes a shape, parity in tract.
#[test]
fn folded_and_moved_batches_export_with_static_shapes() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["windows", "patches", "expanded_masks"] {
        let case = case(name);
        for opset in [11, 13] {
            let options = ProgramOptions {
                opset: Opset::new(opset).unwrap(),
                ..ProgramOptions::default()
            };
            let out = dir.path().join(format!("{name}-{opset}.onnx"));
            let report = export_case(&case, &options, &out).unwrap();
            assert_eq!(
                report.outputs,
                [OutputShape {
                    name: "output".to_owned(),
                    batch_axis: Some(0),
                    sizes: Extent::all_fixed(&case.input)
                }]
            );
            let model = decode(&out);
            let ops = op_types(&model);
            for banned in ["Shape", "Gather", "ConstantOfShape", "Expand", "Identity"] {
                assert!(!ops.iter().any(|o| o == banned), "{name}: {ops:?}");
            }
            assert!(ops.iter().any(|o| o == "Transpose"), "{name}: {ops:?}");
            let graph = model.graph.as_ref().unwrap();
            for reshape in graph
                .node
                .iter()
                .filter(|n| n.op_type.as_deref() == Some("Reshape"))
            {
                let target = graph
                    .initializer
                    .iter()
                    .find(|i| i.name.as_deref() == reshape.input.get(1).map(String::as_str))
                    .expect("a Reshape's target is a constant");
                let batch_entries = target.int64_data.iter().filter(|&&d| d <= 0).count()
                    + target
                        .raw_data
                        .as_deref()
                        .unwrap_or_default()
                        .chunks(8)
                        .filter(|c| i64::from_le_bytes((*c).try_into().unwrap()) <= 0)
                        .count();
                assert_eq!(batch_entries, 1, "{name}: {reshape:?}");
            }
            case.assert_parity(&out, &format!("opset {opset}"));
        }
    }
}

#[test]
fn classifier_at_opset_9_has_no_resize_to_need() {
    let case = case("classifier");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c9.onnx");
    let options = ProgramOptions {
        opset: Opset::new(9).unwrap(),
        ..ProgramOptions::default()
    };
    export_case(&case, &options, &out).unwrap();
    assert_eq!(decode(&out).opset_import[0].version, Some(9));
    case.assert_parity(&out, "opset 9");
    // The UNet upsamples, which needs Resize (opset 11).
    let err = export_case(&self::case("unet"), &options, &out).unwrap_err();
    assert!(err.to_string().contains("opset 11"), "{err}");
}

#[test]
fn file_is_atc_shaped_with_fqn_initializers() {
    let case = case("unet");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("unet.onnx");
    export_case(&case, &ProgramOptions::default(), &out).unwrap();
    let model = decode(&out);
    assert_eq!(model.ir_version, Some(6));
    assert_eq!(model.opset_import.len(), 1);
    assert_eq!(model.opset_import[0].version, Some(11));
    assert_batch_first_io(&model);
    let graph = model.graph.as_ref().unwrap();
    let ops = op_types(&model);
    for banned in [
        "Identity",
        "Shape",
        "Gather",
        "Unsqueeze",
        "BatchNormalization",
    ] {
        assert!(!ops.iter().any(|o| o == banned), "{banned} in {ops:?}");
    }
    assert_eq!(ops.iter().filter(|o| *o == "Resize").count(), 3);
    assert!(ops.iter().any(|o| o == "ConvTranspose"));
    let names: Vec<&str> = graph
        .initializer
        .iter()
        .filter_map(|i| i.name.as_deref())
        .collect();
    assert!(
        names.contains(&"up.weight") && names.contains(&"out.bias"),
        "{names:?}"
    );
    assert!(names.contains(&"enc1.0.weight.fused_bn"), "{names:?}");
}

/// What the model computes from parameters and buffers alone (StdConv's weight
/// standardisation, `gamma * scale` reshaped, a relative position bias looked up through an
/// int64 index buffer, softplus of a parameter) is evaluated at export: every node reads a
/// value computed from the input, the raw parameters are not written, and the outputs match
/// torch in tract.
#[test]
fn parameter_only_subgraphs_become_initializers() {
    let case = case("param_ops");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("param_ops.onnx");
    export_case(&case, &ProgramOptions::default(), &out).unwrap();
    let model = decode(&out);
    let graph = model.graph.as_ref().unwrap();
    let mut live: HashSet<&str> = graph
        .input
        .iter()
        .filter_map(|i| i.name.as_deref())
        .collect();
    for node in &graph.node {
        assert!(
            node.input.iter().any(|i| live.contains(i.as_str())),
            "{:?} of {:?} computes from initializers alone",
            node.op_type,
            node.input
        );
        live.extend(node.output.iter().map(String::as_str));
    }
    let ops = op_types(&model);
    for folded in ["Softplus", "BatchNormalization", "ReduceMean", "Gather"] {
        assert_eq!(
            ops.iter().filter(|o| *o == folded).count(),
            usize::from(folded == "ReduceMean"),
            "{folded} in {ops:?}"
        );
    }
    let names: Vec<&str> = graph
        .initializer
        .iter()
        .filter_map(|i| i.name.as_deref())
        .collect();
    for raw in [
        "stem.weight",
        "conv.weight",
        "gamma",
        "attention.table",
        "attention.index",
    ] {
        assert!(!names.contains(&raw), "{raw} in {names:?}");
    }
    case.assert_parity(&out, "folded");
}

#[test]
fn fixed_batch_export_keeps_the_graph_and_fixes_the_io() {
    let case = case("classifier");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.onnx");
    let options = ProgramOptions {
        batch: Batch::Fixed(3),
        ..ProgramOptions::default()
    };
    export_case(&case, &options, &out).unwrap();
    let model = decode(&out);
    let input = &model.graph.as_ref().unwrap().input[0];
    assert_eq!(first_dim(input), Some(Dim::DimValue(3)));
}

#[test]
fn a_node_that_freezes_the_batch_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.onnx");
    let err = export_case(&case("frozen"), &ProgramOptions::default(), &out)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("node `flatten`"), "{err}");
    assert!(err.contains("torch.ops.aten.flatten.using_ints"), "{err}");
    assert!(err.contains("the batch"), "{err}");
    assert!(err.contains("self.conv(x).flatten()"), "stack trace: {err}");
    assert!(!out.exists());
}

#[test]
fn an_unsupported_op_is_named_with_its_call_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("u.onnx");
    let err = export_case(&case("unsupported"), &ProgramOptions::default(), &out)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "node `logit_backward` (#1, torch.ops.aten.logit_backward.default): ckpt has no lowering of this op to ATC-clean opset-11 operators"
        ),
        "{err}"
    );
    assert!(
        err.contains("call: aten.logit_backward.default(grad_output: as_tensor, self: as_tensor)"),
        "{err}"
    );
    assert!(err.contains("torch.ops.aten.logit_backward(y, y)"), "{err}");
    assert!(err.contains("supported aten ops: conv1d.default"), "{err}");
    assert!(!out.exists());
}

#[test]
fn archives_are_told_apart_by_content() {
    let is_pt2_at = |path: &Path| is_pt2(&std::fs::File::open(path).unwrap()).unwrap();
    assert!(is_pt2_at(&fixtures().join("unet.pt2")));
    let pth = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/onnx/resnet18_narrow.pth");
    assert!(!is_pt2_at(&pth));
    assert!(!is_pt2_at(&fixtures().join("manifest.json")));
}

#[test]
fn archive_weights_read_by_fqn() {
    let mut archive = Pt2Archive::open(&fixtures().join("classifier.pt2")).unwrap();
    let fc = archive.tensor("fc.weight").unwrap().layout.sizes.clone();
    assert_eq!(fc, vec![5, 8]);
    assert_eq!(archive.read_f32("fc.weight").unwrap().len(), 40);
    let err = archive.read_f32("nope.weight").unwrap_err().to_string();
    assert!(err.starts_with("tensor `nope.weight`"), "{err}");
    // int64 tensors (index constants; here a BatchNorm's counter) are read as their values.
    let count = archive.read_f32("bn_a.num_batches_tracked").unwrap();
    assert_eq!(count.len(), 1);
    assert!(count[0] >= 0.0 && count[0].fract() == 0.0, "{count:?}");
}

#[test]
fn corrupt_archives_are_refused_naming_the_record() {
    let open = |name: &str| {
        Pt2Archive::open(&fixtures().join(name))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let err = open("bad_layout.pt2");
    assert!(
        err.starts_with("tensor `head.weight`: sizes [3, 8000]")
            && err.contains("data/weights/weight_"),
        "{err}"
    );
    let err = open("bad_program.pt2");
    assert!(
        err.starts_with("`models/model.json`: not a program"),
        "{err}"
    );
    let err = open("manifest.json");
    assert!(!err.is_empty());
}

fn ckpt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ckpt"))
}

#[test]
fn cli_routes_pt2_and_refuses_flags_that_do_not_apply() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixtures().join("classifier.pt2");
    let out = dir.path().join("c.onnx");
    let run = ckpt()
        .args([
            "to-onnx",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("--input_shape=\"input:-1,3,16,16\" --dynamic_batch_size=\"1,2,4,8\""),
        "{stdout}"
    );
    for flags in [["--arch", "resnet18"], ["--input-shape", "3,16,16"]] {
        let run = ckpt()
            .args(["to-onnx", input.to_str().unwrap(), "-o"])
            .arg(dir.path().join("x.onnx"))
            .args(flags)
            .output()
            .unwrap();
        assert_eq!(run.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            stderr.contains(&format!("{} does not apply", flags[0])),
            "{stderr}"
        );
        assert!(!dir.path().join("x.onnx").exists());
    }
}

#[test]
fn inspect_reports_the_program() {
    let input = fixtures().join("classifier.pt2");
    let report = inspect_json(&input);
    assert_eq!(report["format"], "pt2");
    assert_eq!(report["archive_name"], "classifier");
    assert_eq!(report["nodes"], 16);
    assert_eq!(report["ops"]["aten.conv2d.default"], 3);
    assert_eq!(
        report["inputs"][0]["sizes"],
        serde_json::json!(["s77", 3, 16, 16])
    );
    assert_eq!(report["state"]["parameters"], 13);
    assert_eq!(report["dtypes"]["int64"], 3);
    let text = inspect_text(&input);
    assert!(
        text.contains("format          pt2 (archive `classifier`"),
        "{text}"
    );
}

/// A token model with int64 ids and a bool padding mask (`fixtures/pt2/generate_tokens.py`):
/// typed graph inputs and outputs, the embedding a Gather on its table, and tract's
/// outputs against torch's at batch 1 and 3 (float32 within tolerance, int64 exactly).
#[test]
fn token_ids_and_masks_are_typed_inputs_and_match_torch_in_tract() {
    use ckpt::onnx::proto::{tensor_proto::DataType, ValueInfoProto};
    use tract_onnx::prelude::*;

    const VOCAB: i64 = 50;
    const SEQ: usize = 8;
    const SEED: i64 = 41;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tokens_int.onnx");
    let mut archive = Pt2Archive::open(&fixtures().join("tokens_int.pt2")).unwrap();
    let report = export_program(&mut archive, &ProgramOptions::default(), &out).unwrap();
    let names: Vec<&str> = report.inputs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["ids", "mask"]);
    let model = decode(&out);
    let graph = model.graph.as_ref().unwrap();
    let elem = |v: &ValueInfoProto| match v.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(type_proto::Value::TensorType(t)) => t.elem_type,
        _ => None,
    };
    let types =
        |values: &[ValueInfoProto]| -> Vec<Option<i32>> { values.iter().map(elem).collect() };
    let (int64, boolean, float) = (
        Some(DataType::Int64 as i32),
        Some(DataType::Bool as i32),
        Some(DataType::Float as i32),
    );
    assert_eq!(types(&graph.input), [int64, boolean]);
    assert_eq!(types(&graph.output), [float, int64, int64]);
    assert_eq!(
        op_types(&model).iter().filter(|o| *o == "Gather").count(),
        1
    );

    let runnable = tract_onnx::onnx()
        .model_for_path(&out)
        .unwrap()
        .into_optimized()
        .unwrap()
        .into_runnable()
        .unwrap();
    for b in [1usize, 3] {
        let ids: Vec<i64> = (0..b * SEQ)
            .map(|i| (i as i64 * 7919 + SEED * 31) % VOCAB)
            .collect();
        let mask: Vec<bool> = (0..b)
            .flat_map(|n| {
                let len = 1 + (n as i64 * 5 + SEED) % SEQ as i64;
                (0..SEQ as i64).map(move |j| j < len)
            })
            .collect();
        let inputs: TVec<TValue> = tvec![
            Tensor::from_shape(&[b, SEQ], &ids).unwrap().into(),
            Tensor::from_shape(&[b, SEQ], &mask).unwrap().into(),
        ];
        let outputs = runnable.run(inputs).unwrap();
        assert_eq!(outputs.len(), 3);
        for (k, got) in outputs.iter().enumerate() {
            let stem = format!("tokens_int.out.b{b}.{k}");
            if got.datum_type() == f32::datum_type() {
                let want = read_f32(&fixtures().join(format!("{stem}.f32")));
                let got = got.to_plain_array_view::<f32>().unwrap();
                assert_eq!(got.len(), want.len());
                let diff = got
                    .iter()
                    .zip(&want)
                    .map(|(g, w)| (g - w).abs())
                    .fold(0.0f32, f32::max);
                let tol = 1e-4 * want.iter().map(|w| w.abs()).fold(1.0f32, f32::max);
                eprintln!(
                    "tokens_int output {k} batch {b}: max |diff| {diff:.3e} (tolerance {tol:.3e})"
                );
                assert!(diff <= tol, "output {k} batch {b}: {diff} > {tol}");
            } else {
                let want: Vec<i64> = std::fs::read(fixtures().join(format!("{stem}.i64")))
                    .unwrap()
                    .chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                let got: Vec<i64> = got
                    .to_plain_array_view::<i64>()
                    .unwrap()
                    .iter()
                    .copied()
                    .collect();
                assert_eq!(got, want, "output {k} batch {b}");
            }
        }
    }
}

/// The recurrent fixture: a bidirectional 2-layer LSTM (batch first), a time-major GRU fed
/// `permute(1, 0, 2)` and the LSTM's final hidden state `h_n[-1]`.
#[test]
fn recurrent_layers_are_one_node_per_layer_and_match_torch_in_tract() {
    let dir = tempfile::tempdir().unwrap();
    let case = case("recurrent");
    for opset in [11, 13] {
        let options = ProgramOptions {
            opset: Opset::new(opset).unwrap(),
            ..ProgramOptions::default()
        };
        let out = dir.path().join(format!("recurrent-{opset}.onnx"));
        export_case(&case, &options, &out).unwrap();
        let model = decode(&out);
        let nodes = &model.graph.as_ref().unwrap().node;
        let attribute = |node: &ckpt::onnx::proto::NodeProto, name: &str| {
            node.attribute
                .iter()
                .find(|a| a.name.as_deref() == Some(name))
                .cloned()
        };
        let lstms: Vec<_> = nodes
            .iter()
            .filter(|n| n.op_type.as_deref() == Some("LSTM"))
            .collect();
        assert_eq!(lstms.len(), 2, "one LSTM node per layer");
        for lstm in &lstms {
            let direction = attribute(lstm, "direction").and_then(|a| a.s);
            assert_eq!(direction.as_deref(), Some(&b"bidirectional"[..]));
            assert_eq!(attribute(lstm, "hidden_size").and_then(|a| a.i), Some(6));
            // X, W, R, B: the zero initial state is left out.
            assert_eq!(lstm.input.len(), 4);
        }
        let grus: Vec<_> = nodes
            .iter()
            .filter(|n| n.op_type.as_deref() == Some("GRU"))
            .collect();
        assert_eq!(grus.len(), 1);
        let reset = attribute(grus[0], "linear_before_reset").and_then(|a| a.i);
        assert_eq!(reset, Some(1));
        let ops = op_types(&model);
        for shape_op in ["Shape", "Gather", "ConstantOfShape", "Expand", "Identity"] {
            assert!(!ops.iter().any(|o| o == shape_op), "{ops:?}");
        }
        case.assert_parity(&out, &format!("opset {opset}"));
    }
}

/// `sequence.pt2` (`fixtures/pt2/generate_sequence.py`): a BERT-style encoder exported with
/// a dynamic sequence length besides the batch.
#[test]
fn a_dynamic_sequence_length_stays_dynamic_and_matches_torch_at_other_lengths() {
    use ckpt::onnx::proto::ValueInfoProto;
    use tract_onnx::prelude::*;

    const VOCAB: i64 = 50;
    const SEED: i64 = 43;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sequence.onnx");
    let mut archive = Pt2Archive::open(&fixtures().join("sequence.pt2")).unwrap();
    let report = export_program(&mut archive, &ProgramOptions::default(), &out).unwrap();
    let [(name, extents)] = report.inputs.as_slice() else {
        panic!("{:?}", report.inputs)
    };
    assert_eq!(name, "input");
    let [Extent::Dynamic {
        name: seq,
        min: 2,
        max: Some(32),
    }] = extents.as_slice()
    else {
        panic!("{extents:?}")
    };
    let model = decode(&out);
    let graph = model.graph.as_ref().unwrap();
    let dims = |v: &ValueInfoProto| -> Vec<Option<Dim>> {
        match v.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(type_proto::Value::TensorType(t)) => t
                .shape
                .as_ref()
                .unwrap()
                .dim
                .iter()
                .map(|d| d.value.clone())
                .collect(),
            _ => Vec::new(),
        }
    };
    let batch = Some(Dim::DimParam("batch".into()));
    let length = Some(Dim::DimParam(seq.clone()));
    assert_eq!(dims(&graph.input[0]), [batch.clone(), length.clone()]);
    assert_eq!(
        dims(&graph.output[0]),
        [batch, length, Some(Dim::DimValue(16))]
    );
    let ops = op_types(&model);
    for shape_op in ["Shape", "Expand", "ConstantOfShape", "Range", "CumSum"] {
        assert!(!ops.iter().any(|o| o == shape_op), "{shape_op} in {ops:?}");
    }

    let runnable = tract_onnx::onnx()
        .model_for_path(&out)
        .unwrap()
        .into_optimized()
        .unwrap()
        .into_runnable()
        .unwrap();
    for (b, s) in [(1usize, 5usize), (3, 20), (2, 32)] {
        let ids: Vec<i64> = (0..b * s)
            .map(|i| (i as i64 * 7919 + SEED * 31) % VOCAB)
            .collect();
        let inputs: TVec<TValue> = tvec![Tensor::from_shape(&[b, s], &ids).unwrap().into()];
        let outputs = runnable.run(inputs).unwrap();
        let got = outputs[0].to_plain_array_view::<f32>().unwrap();
        assert_eq!(got.shape(), [b, s, 16]);
        let want = read_f32(&fixtures().join(format!("sequence.out.b{b}.s{s}.f32")));
        let diff = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs())
            .fold(0.0f32, f32::max);
        eprintln!("sequence batch {b} length {s}: max |diff| {diff:.3e}");
        assert!(diff <= 1e-4, "batch {b} length {s}: {diff}");
    }
}

/// The ATC command printed for a dynamic length lists both dims in every `--dynamic_dims`
/// profile, in ND format.
#[test]
fn a_dynamic_sequence_length_compiles_with_dynamic_dims() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sequence.onnx");
    let run = Command::new(env!("CARGO_BIN_EXE_ckpt"))
        .arg("to-onnx")
        .arg(fixtures().join("sequence.pt2"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&run.stdout).into_owned() + &String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{text}");
    assert!(text.contains("--input_format=ND"), "{text}");
    assert!(text.contains("--input_shape=\"input:-1,-1\""), "{text}");
    assert!(
        text.contains("--dynamic_dims=\"1,4;1,8;1,16;1,32;2,4;"),
        "{text}"
    );
}
