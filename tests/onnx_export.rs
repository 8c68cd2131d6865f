//! `to-onnx` parity: exports the narrow torchvision fixtures in `fixtures/onnx` (written by
//! `fixtures/onnx/generate.py` with real torch) and runs them in tract-onnx at batch 1 and 3
//! from one file, against torch eager's outputs. Tolerance: max |diff| ≤ 1e-4·max(1, max|ref|).

use std::path::{Path, PathBuf};

use ckpt::onnx::proto::tensor_shape_proto::dimension::Value as Dim;
use ckpt::onnx::Choice;
use ckpt::onnx::WriteOptions;
use ckpt::onnx::{export, Batch, ExportOptions, ExportReport, OnnxError, Opset};

mod common;
use common::{assert_batch_first_io, decode, first_dim, Fixture};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/onnx")
}

fn case(name: &str) -> Fixture {
    Fixture::named(&fixtures(), name)
}

fn defaults(case: &Fixture) -> ExportOptions {
    ExportOptions {
        input: case.input,
        ..ExportOptions::default()
    }
}

fn export_case(
    case: &Fixture,
    options: &ExportOptions,
    out: &Path,
) -> Result<ExportReport, OnnxError> {
    let mut ckpt = ckpt::torch::open(&fixtures().join(format!("{}.pth", case.name)))?;
    export(&mut ckpt, options, out)
}

#[test]
fn every_fixture_matches_torch_in_tract() {
    let dir = tempfile::tempdir().unwrap();
    for case in Fixture::all(&fixtures()) {
        let out = dir.path().join(format!("{}.onnx", case.name));
        let report = export_case(&case, &defaults(&case), &out).unwrap();
        assert!(
            report
                .arch
                .starts_with(case.entry["arch"].as_str().unwrap()),
            "{}: detected {}",
            case.name,
            report.arch
        );
        case.assert_parity(&out, "opset 11 folded");
    }
}

#[test]
fn file_is_atc_shaped() {
    let case = case("resnet18_narrow");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r18.onnx");
    let report = export_case(&case, &defaults(&case), &out).unwrap();
    assert_eq!(report.stripped, vec!["module."]);
    let model = decode(&out);
    assert_eq!(model.ir_version, Some(6));
    assert_eq!(model.opset_import.len(), 1);
    assert_eq!(model.opset_import[0].domain.as_deref(), Some(""));
    assert_eq!(model.opset_import[0].version, Some(11));
    assert_batch_first_io(&model);
    let graph = model.graph.unwrap();
    assert_eq!(graph.input[0].name.as_deref(), Some("input"));
    assert_eq!(graph.output[0].name.as_deref(), Some("output"));
    let ops: Vec<&str> = graph
        .node
        .iter()
        .filter_map(|n| n.op_type.as_deref())
        .collect();
    assert!(!ops.contains(&"BatchNormalization") && !ops.contains(&"Identity"));
    assert!(!ops
        .iter()
        .any(|op| ["Shape", "Gather", "Unsqueeze"].contains(op)));
    let names: Vec<&str> = graph
        .initializer
        .iter()
        .filter_map(|i| i.name.as_deref())
        .collect();
    assert!(names.contains(&"fc.weight") && names.contains(&"conv1.weight.fused_bn"));
}

#[test]
fn every_opset_without_folding_matches() {
    let case = case("resnext_narrow_f16");
    let dir = tempfile::tempdir().unwrap();
    for version in 9..=13 {
        let out = dir.path().join(format!("o{version}.onnx"));
        let options = ExportOptions {
            opset: Opset::new(version).unwrap(),
            fold_bn: false,
            ..defaults(&case)
        };
        export_case(&case, &options, &out).unwrap();
        let model = decode(&out);
        let ir = [4, 5, 6, 7, 7][(version - 9) as usize];
        assert_eq!(model.ir_version, Some(ir));
        let graph = model.graph.unwrap();
        let count = |op: &str| {
            graph
                .node
                .iter()
                .filter(|n| n.op_type.as_deref() == Some(op))
                .count()
        };
        assert_eq!(
            count("BatchNormalization"),
            count("Conv"),
            "one BatchNormalization per conv"
        );
        assert!(graph
            .initializer
            .iter()
            .any(|i| i.name.as_deref() == Some("layer1.0.bn2.running_var")));
        case.assert_parity(&out, &format!("opset {version} unfolded"));
    }
}

/// With no memory budget every weight waits in the spill file; the written file is the
/// same, byte for byte, as one built in memory.
#[test]
fn spilled_weights_write_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    for (i, name) in ["resnet18_narrow", "vit_narrow"].into_iter().enumerate() {
        let case = case(name);
        let in_memory = dir.path().join(format!("{name}.memory.onnx"));
        let spilled = dir.path().join(format!("{name}.spilled.onnx"));
        export_case(&case, &defaults(&case), &in_memory).unwrap();
        let options = ExportOptions {
            write: WriteOptions {
                memory_budget: 0,
                ..WriteOptions::default()
            },
            ..defaults(&case)
        };
        export_case(&case, &options, &spilled).unwrap();
        let read = |p: &Path| std::fs::read(p).unwrap();
        assert!(read(&in_memory) == read(&spilled), "{name}: files differ");
        // The spill file is unnamed: nothing but the two outputs per model is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2 * (i + 1));
    }
}

#[test]
fn external_data_and_fixed_batch() {
    let case = case("resnet_bottleneck_narrow");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ext.onnx");
    let options = ExportOptions {
        write: WriteOptions {
            max_inline_bytes: 0,
            memory_budget: 0,
        },
        ..defaults(&case)
    };
    let report = export_case(&case, &options, &out).unwrap();
    assert_eq!(
        report.written.external,
        Some(dir.path().join("ext.onnx.data"))
    );
    let graph = decode(&out).graph.unwrap();
    let external = graph
        .initializer
        .iter()
        .filter(|i| i.data_location == Some(1))
        .count();
    assert!(
        external > 0
            && graph
                .initializer
                .iter()
                .all(|i| i.data_location == Some(1) || i.raw_data.is_some())
    );
    case.assert_parity(&out, "external data");

    let fixed = Fixture {
        batches: vec![3],
        ..case
    };
    let out = dir.path().join("fixed.onnx");
    let options = ExportOptions {
        batch: Batch::Fixed(3),
        ..defaults(&fixed)
    };
    export_case(&fixed, &options, &out).unwrap();
    let graph = decode(&out).graph.unwrap();
    assert_eq!(first_dim(&graph.input[0]), Some(Dim::DimValue(3)));
    fixed.assert_parity(&out, "fixed batch 3");
}

#[test]
fn wrong_architecture_lists_missing_and_unexpected_keys() {
    let case = case("resnet18_narrow");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.onnx");
    let options = ExportOptions {
        arch: Choice::Named("resnet34".into()),
        ..defaults(&case)
    };
    let message = export_case(&case, &options, &out).unwrap_err().to_string();
    assert!(message.contains("does not match resnet34"), "{message}");
    assert!(
        message.contains("missing keys") && message.contains("layer1.2.conv1.weight"),
        "{message}"
    );
    let options = ExportOptions {
        arch: Choice::Named("resnet50".into()),
        ..defaults(&case)
    };
    let message = export_case(&case, &options, &out).unwrap_err().to_string();
    assert!(message.contains("conv3"), "{message}");
    let options = ExportOptions {
        arch: Choice::Named("vgg16".into()),
        ..defaults(&case)
    };
    assert!(export_case(&case, &options, &out).is_err());
    let options = ExportOptions {
        arch: Choice::Named("lenet".into()),
        ..defaults(&case)
    };
    let message = export_case(&case, &options, &out).unwrap_err().to_string();
    assert!(
        message.contains("unknown architecture `lenet`") && message.contains("wide_resnet101_2"),
        "{message}"
    );
    assert!(!out.exists(), "no output on failure");
}

/// VGG's `AdaptiveAvgPool2d((7, 7))` at any input: 448 gives a 14×14 map (one 2×2
/// AveragePool), 100 a 3×3 one, whose uneven windows the lowering writes one by one.
#[test]
fn vgg_pools_adaptively_at_any_input() {
    let case = case("vgg16_narrow");
    let dir = tempfile::tempdir().unwrap();
    for side in [100, 448] {
        let options = ExportOptions {
            input: [3, side, side],
            ..defaults(&case)
        };
        export_case(&case, &options, &dir.path().join(format!("v{side}.onnx"))).unwrap();
    }
}

/// Every opset from 9 to 13, BatchNorm folded and not, on the families whose ops change
/// form with the opset: ceil-mode MaxPool (extra end padding before 10), Clip (attributes
/// before 11), Split (an attribute before 13), and DenseNet's unfolded BatchNormalization;
/// GoogLeNet adds ceil-mode pools inside Inception branches and after Concats; the ViT's
/// class-token Slices (attributes before 10) and ConvNeXt's ReduceMean/Erf chains complete it.
#[test]
fn opset_dependent_ops_match_at_every_opset() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "squeezenet1_0_narrow",
        "mobilenet_v2_narrow",
        "shufflenet_v2_narrow",
        "densenet_narrow",
        "googlenet_narrow",
        "vit_narrow",
        "convnext_narrow",
    ] {
        let case = case(name);
        for version in 9..=13 {
            for fold_bn in [true, false] {
                let out = dir.path().join(format!("{name}.o{version}.{fold_bn}.onnx"));
                let options = ExportOptions {
                    opset: Opset::new(version).unwrap(),
                    fold_bn,
                    ..defaults(&case)
                };
                export_case(&case, &options, &out).unwrap();
                let label = format!("opset {version} fold {fold_bn}");
                case.assert_parity(&out, &label);
            }
        }
    }
}

#[test]
fn shufflenet_has_no_shape_arithmetic() {
    let case = case("shufflenet_v2_narrow");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.onnx");
    export_case(&case, &defaults(&case), &out).unwrap();
    let graph = decode(&out).graph.unwrap();
    let count = |op: &str| {
        graph
            .node
            .iter()
            .filter(|n| n.op_type.as_deref() == Some(op))
            .count()
    };
    // 16 blocks: 13 split, 16 shuffles of Reshape → Transpose → Reshape; the head's
    // `mean([2, 3])` is a GlobalAveragePool and a Reshape to the channels.
    assert_eq!(
        [count("Split"), count("Transpose"), count("Reshape")],
        [13, 16, 33]
    );
    for op in ["Shape", "Gather", "Unsqueeze", "Slice", "Constant"] {
        assert_eq!(count(op), 0, "{op}");
    }
    // The only Casts are the max pool's NaN flags (to float and back to bool), no shape
    // arithmetic.
    assert_eq!(count("IsNaN"), 1);
    assert_eq!(count("Cast"), 2);
    // Every Reshape target copies the batch with 0.
    for node in graph
        .node
        .iter()
        .filter(|n| n.op_type.as_deref() == Some("Reshape"))
    {
        let target = graph
            .initializer
            .iter()
            .find(|i| i.name.as_deref() == node.input.get(1).map(String::as_str))
            .unwrap();
        let first = target.raw_data.as_ref().unwrap()[..8].to_vec();
        assert_eq!(i64::from_le_bytes(first.try_into().unwrap()), 0);
    }
}

#[test]
fn alexnet_is_not_mistaken_for_vgg_and_vice_versa() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.onnx");
    let alexnet = case("alexnet_narrow");
    let options = ExportOptions {
        arch: Choice::Named("vgg11".into()),
        ..defaults(&alexnet)
    };
    let message = export_case(&alexnet, &options, &out)
        .unwrap_err()
        .to_string();
    assert!(message.contains("does not match vgg11"), "{message}");
    let vgg = case("vgg16_narrow");
    let report = export_case(&vgg, &defaults(&vgg), &out).unwrap();
    assert_eq!(report.arch, "vgg16");
}

/// RegNet: the 3×3 convs' group counts come from the weights (3 groups from regnet_x's
/// 0.5 bottleneck multiplier), SE (two biased 1×1 convs and a Sigmoid gate) only in
/// RegNetY, a `proj` shortcut only in each stage's first block; unfolded parity at opsets
/// 9 and 13; a name's block counts are enforced.
#[test]
fn regnet_groups_se_and_shortcuts() {
    let dir = tempfile::tempdir().unwrap();
    let families = [
        (
            "regnet_x_narrow",
            "regnet_x (depths [1, 2, 2, 1], widths [8, 16, 24, 32])",
            vec![2, 4, 4, 3, 3, 4],
            0,
        ),
        (
            "regnet_y_narrow",
            "regnet_y (depths [1, 2, 3, 1], widths [8, 16, 16, 24])",
            vec![2, 2, 2, 4, 4, 4, 3],
            7,
        ),
    ];
    for (name, arch, groups, se_blocks) in families {
        let case = case(name);
        let out = dir.path().join(format!("{name}.onnx"));
        let report = export_case(&case, &defaults(&case), &out).unwrap();
        assert_eq!(report.arch, arch);
        let graph = decode(&out).graph.unwrap();
        let count = |op: &str| {
            graph
                .node
                .iter()
                .filter(|n| n.op_type.as_deref() == Some(op))
                .count()
        };
        let grouped: Vec<i64> = graph
            .node
            .iter()
            .flat_map(|n| &n.attribute)
            .filter(|a| a.name.as_deref() == Some("group") && a.i != Some(1))
            .filter_map(|a| a.i)
            .collect();
        assert_eq!(grouped, groups, "{name}");
        let blocks = groups.len();
        // Stem, three convs per block, two per SE, one per stage's `proj`.
        assert_eq!(count("Conv"), 1 + 3 * blocks + 2 * se_blocks + 4, "{name}");
        assert_eq!([count("Sigmoid"), count("Mul")], [se_blocks; 2], "{name}");
        assert_eq!(count("Add"), blocks, "{name}");
        for version in [9, 13] {
            let options = ExportOptions {
                opset: Opset::new(version).unwrap(),
                fold_bn: false,
                ..defaults(&case)
            };
            export_case(&case, &options, &out).unwrap();
            let graph = decode(&out).graph.unwrap();
            let batch_norms = graph
                .node
                .iter()
                .filter(|n| n.op_type.as_deref() == Some("BatchNormalization"))
                .count();
            assert_eq!(batch_norms, 1 + 3 * blocks + 4, "{name}");
            case.assert_parity(&out, &format!("opset {version} unfolded"));
        }
    }
    let case = case("regnet_y_narrow");
    let options = ExportOptions {
        arch: Choice::Named("regnet_y_400mf".into()),
        ..defaults(&case)
    };
    let out = dir.path().join("named.onnx");
    let message = export_case(&case, &options, &out).unwrap_err().to_string();
    assert!(
        message.contains("does not match regnet_y_400mf")
            && message.contains("trunk_output.block2.block2-2.f.a.0.weight"),
        "{message}"
    );
}

/// The ViT's class token and head use no Gather/Expand/Shape, so the batch stays a pure
/// dim_param; ConvNeXt's channels-last permutes are Transposes, one each way per block
/// and per channel LayerNorm.
#[test]
fn transformers_have_no_shape_arithmetic() {
    let dir = tempfile::tempdir().unwrap();
    // ViT: one for the patch tokens, then per layer q, k, v to heads, the keys for the
    // scores and the heads merged (two layers). ConvNeXt: two per block (five) and per
    // `LayerNorm2d` (the stem's, three downsamplings' and the head's). GELU: one per ViT
    // layer, one per ConvNeXt block.
    for (name, transposes, gelus) in [
        ("vit_narrow", 1 + 2 * 5, 2),
        ("convnext_narrow", 2 * 5 + 2 * 5, 5),
    ] {
        let case = case(name);
        let out = dir.path().join(format!("{name}.onnx"));
        export_case(&case, &defaults(&case), &out).unwrap();
        let graph = decode(&out).graph.unwrap();
        let ops: Vec<&str> = graph
            .node
            .iter()
            .filter_map(|n| n.op_type.as_deref())
            .collect();
        for banned in ["Shape", "Gather", "Expand", "Unsqueeze", "Identity", "Tile"] {
            assert!(!ops.contains(&banned), "{name} has {banned}");
        }
        let count = |op: &str| ops.iter().filter(|o| **o == op).count();
        assert_eq!(count("Transpose"), transposes, "{name}");
        assert_eq!(count("Erf"), gelus, "{name}");
    }
}

#[test]
fn vit_refuses_an_input_its_position_embedding_does_not_fit() {
    let case = case("vit_narrow");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.onnx");
    let options = ExportOptions {
        input: [3, 32, 40],
        ..defaults(&case)
    };
    let err = export_case(&case, &options, &out).unwrap_err().to_string();
    assert!(err.contains("17 tokens") && err.contains("32×40"), "{err}");
    assert!(!out.exists());
}

/// googlenet's `transform_input` is not in the weights: the export says what it assumed,
/// and `--transform-input` is refused for any other architecture.
#[test]
fn googlenet_transform_input_is_an_explicit_choice() {
    let dir = tempfile::tempdir().unwrap();
    let google = case("googlenet_narrow");
    let report = export_case(&google, &defaults(&google), &dir.path().join("g.onnx")).unwrap();
    assert!(
        report.notes.iter().any(|n| n.contains("transform_input")),
        "{:?}",
        report.notes
    );
    let options = ExportOptions {
        transform_input: true,
        ..defaults(&google)
    };
    let report = export_case(&google, &options, &dir.path().join("t.onnx")).unwrap();
    assert!(report.notes.is_empty());
    let graph = decode(&dir.path().join("t.onnx")).graph.unwrap();
    let first = graph.node[0].name.as_deref().unwrap_or_default();
    assert!(first.starts_with("/transform_input/"), "{first}");

    let resnet = case("resnet18_narrow");
    let options = ExportOptions {
        transform_input: true,
        ..defaults(&resnet)
    };
    let out = dir.path().join("r.onnx");
    let err = export_case(&resnet, &options, &out)
        .unwrap_err()
        .to_string();
    assert!(err.contains("googlenet only"), "{err}");
    assert!(!out.exists());
}
