//! A model of CANN's ONNX parser as data: which `ai.onnx` op types and opsets its plugins
//! register, and for the operators whose plugins were read, what each does with the node
//! (attributes read, ignored or refused; inputs that must be constant; element types it
//! changes; the Ascend operator it builds and how that computes). `ckpt atc-check`
//! ([`super::atc_check`]) applies it to any ONNX file, `to-onnx`'s own rules
//! (`onnx::atc`) are checked against it, and `docs/atc.md` is generated from it.
//!
//! Source: CANN's op library, `ops/built-in/framework/onnx_plugin/*.cc`, as mirrored in
//! the public repository `dengguojie/vue-element-admin`, branch `stp`, commit
//! [`PLUGIN_COMMIT`] (June 2022). Newer CANN releases register more opsets; their lists
//! ([`GENERATIONS`]) come from public reports, not from their sources.

/// The commit of the plugin sources this table was read from.
pub const PLUGIN_COMMIT: &str = "7d77ce32d0541475052616d118df360baf50a5f5";

/// Where the plugin sources are, for links.
pub const PLUGIN_DIR: &str = "ops/built-in/framework/onnx_plugin";

/// Where the operator rules come from, in one line.
pub fn source() -> String {
    format!("CANN's {PLUGIN_DIR}/ at dengguojie/vue-element-admin@{PLUGIN_COMMIT} (2022-06)")
}

/// A CANN generation: the default-domain opsets its ATC accepts for a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generation {
    /// The name `--cann` takes.
    pub name: &'static str,
    /// Model opsets whose operators it registers.
    pub opsets: &'static [i64],
    /// Where the list comes from.
    pub evidence: &'static str,
}

/// The generations `atc-check --cann` knows; the first is the default. Operator rules are
/// the 2022 plugins' for all of them (the later sources were not read).
pub const GENERATIONS: [Generation; 4] = [
    Generation {
        name: "2022",
        opsets: &[9, 10, 11, 12, 13, 14, 15],
        evidence: "read from the plugin sources (each op's registrations below; 9–15 is where most ops are registered)",
    },
    Generation {
        name: "8.1",
        opsets: &[11, 13],
        evidence: "public reports of CANN 8.0/8.1 (not verified from source)",
    },
    Generation {
        name: "8.3",
        opsets: &[11, 13, 17],
        evidence: "public reports of CANN 8.3 (not verified from source)",
    },
    Generation {
        name: "8.5",
        opsets: &[11, 13, 17, 19],
        evidence: "public reports of CANN 8.5 (not verified from source)",
    },
];

/// The generation named `name`.
pub fn generation(name: &str) -> Option<&'static Generation> {
    GENERATIONS.iter().find(|g| g.name == name)
}

/// Every `ai.onnx::<opset>::<op>` the 2022 plugins register (`REGISTER_CUSTOM_OP(..)
/// .OriginOpType(..)`), by op type.
pub const REGISTERED: [(&str, &[i64]); 177] = [
    ("Abs", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Acos", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Acosh", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("AdaptiveAvgPool2d", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Add", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("AffineGrid", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("And", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ArgMax", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ArgMin", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("AscendAntiQuant", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("AscendDequant", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("AscendDequantS16", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("AscendQuant", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("AscendRequant", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("AscendRequantS16", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Asin", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Asinh", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Atan", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Atanh", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("AveragePool", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("BatchMatMul", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("BatchMultiClassNMS", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("BatchNormalization", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("BitShift", &[11, 12, 13, 14, 15]),
    ("BoundingBoxDecode", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Cast", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Ceil", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Celu", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Clip", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Col2im", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Compress", &[9, 10, 11, 12, 13, 14, 15]),
    ("Concat", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ConstantOfShape", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Conv", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ConvTranspose", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Cos", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Cosh", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("CumSum", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("DeformableConv2D", &[9, 10, 11, 12, 13, 14, 15]),
    ("DeformableOffsets", &[9, 10, 11, 12, 13, 14, 15]),
    ("DepthToSpace", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Det", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Div", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Dropout", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("DynSeqOuter", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Einsum", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Elu", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("EmbeddingBag", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Equal", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Erf", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Exp", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Expand", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("EyeLike", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Flatten", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Floor", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("GRU", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Gather", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("GatherElements", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("GatherND", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Gemm", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("GlobalAveragePool", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("GlobalLpPool", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("GlobalMaxPool", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Greater", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("GreaterOrEqual", &[8, 12, 13, 14, 15]),
    ("GroupNormRelu", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("HardSigmoid", &[1, 6, 8, 9, 10, 11, 12, 13, 14, 15]),
    ("HardSwish", &[14, 15]),
    ("Hardmax", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Identity", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("If", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("InstanceNormalization", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Int8Conv", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Int8ConvRelu", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Int8Dequantize", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Int8FC", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Int8GivenIntTensorFill", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Int8GivenTensorFill", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Int8Quantize", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Int8Transpose", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("IsInf", &[10, 11, 12, 13, 14, 15]),
    ("IsNaN", &[9, 10, 11, 12, 13, 14, 15]),
    ("LRN", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("LSTM", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("LSTMP", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("LeakyRelu", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Less", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("LessOrEqual", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Log", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("LogSoftmax", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("LpNormalization", &[1, 8, 9, 10, 11, 12, 13, 14, 15]),
    ("LpPool", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("MatMul", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Max", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("MaxPool", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("MaxRoiPool", &[1, 8, 9, 10, 11, 12, 13, 14, 15]),
    ("MaxUnpool", &[9, 11, 12, 13, 14, 15]),
    ("Mean", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("MeanVarianceNormalization", &[9, 10, 11, 12, 13, 14, 15]),
    ("Min", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Mod", &[10, 11, 12, 13, 14, 15]),
    ("MovingSumWithSigmoid", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Mul", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Multinomial", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Neg", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("NonMaxSuppression", &[10, 11, 12, 13, 14, 15]),
    ("NonZero", &[9, 10, 11, 12, 13, 14, 15]),
    ("Not", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("OneHot", &[9, 10, 11, 12, 13, 14, 15]),
    ("Or", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("PRelu", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("PSROIPooling", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Pad", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Pow", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("RandomNormal", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("RandomNormalLike", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("RandomUniform", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("RandomUniformLike", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Range", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Reciprocal", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ReduceL1", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ReduceL2", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ReduceLogSum", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ReduceLogSumExp", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ReduceMax", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ReduceMean", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ReduceMin", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ReduceProd", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ReduceSum", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("ReduceSumSquare", &[1, 8, 9, 10, 11, 12, 13, 14, 15]),
    ("Relu", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Reshape", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Resize", &[10, 11, 12, 13, 14, 15]),
    ("ReverseSequence", &[10, 11, 12, 13, 14, 15]),
    ("RoiAlign", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("RoiExtractor", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Round", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Scatter", &[9, 10, 11]),
    ("ScatterElements", &[11, 12, 13, 14, 15]),
    ("ScatterND", &[8, 10, 11, 12, 13, 14, 15]),
    ("Selu", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Shape", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Shrink", &[9, 10, 11, 12, 13, 14, 15]),
    ("Sigmoid", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Sign", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Sin", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Sinh", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Size", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Slice", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Softmax", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("SoftmaxCrossEntropyLoss", &[12, 13, 14, 15]),
    ("Softplus", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Softsign", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("SpaceToDepth", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Split", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Sqrt", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Squeeze", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Sub", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Sum", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Tan", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Tanh", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("TfIdfVectorizer", &[9, 10, 11, 12, 13, 14, 15]),
    ("ThresholdedRelu", &[10, 11, 12, 13, 14, 15]),
    ("Tile", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("TopK", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Transpose", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Trilu", &[14, 15]),
    ("Triu", &[13, 14, 15]),
    ("Unsqueeze", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Upsample", &[8, 9, 11, 12, 13, 14, 15]),
    ("Where", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Xor", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("Yolo", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("YoloPreDetection", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("YoloV3DetectionOutputV2", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("YoloV5DetectionOutput", &[8, 9, 10, 11, 12, 13, 14, 15]),
    ("YoloxBoundingBoxDecode", &[8, 9, 10, 11, 12, 13, 14, 15]),
];

/// The opsets the plugins register `op` for (empty: no parser, ATC error E16002).
pub fn registered(op: &str) -> &'static [i64] {
    REGISTERED
        .iter()
        .find(|(name, _)| *name == op)
        .map_or(&[], |(_, opsets)| opsets)
}

/// A value an attribute takes: what ONNX defaults it to, or what the Ascend operator
/// computes with when the plugin does not pass it on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f32),
    /// Not set (no clip, no activation list).
    Absent,
}

/// What a plugin does with one attribute.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Treatment {
    /// Passed on with its meaning.
    Read,
    /// Not read: the device computes as if it were `device`; ONNX's default is `onnx`. A
    /// node whose value (or ONNX's default) differs computes something else on the device.
    Ignored {
        /// ONNX's default.
        onnx: Value,
        /// What the device computes with.
        device: Value,
    },
    /// The plugin fails the conversion unless the value is `allowed`.
    Refused {
        /// The one value the plugin accepts.
        allowed: Value,
    },
}

/// One attribute of a plugin.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attribute {
    /// The ONNX attribute's name.
    pub name: &'static str,
    /// What the plugin does with it.
    pub treatment: Treatment,
}

/// A rule that needs the node's context (shapes, constants), checked by `atc_check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// `Resize` (`Rule::describe` says what each rule checks).
    Resize,
    /// `ArgMax`/`ArgMin`.
    KeptAxisAtOne,
    /// `AveragePool`.
    AvgPoolAiCpu,
    /// `Softmax`/`LogSoftmax`.
    SoftmaxOneAxis,
}

#[cfg(test)]
impl Rule {
    /// What the rule checks, for users (`docs/atc.md`, the one place it is said).
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Resize => "nearest becomes ResizeNearestNeighborV2 and linear ResizeBilinearV2, with `align_corners` only for the `align_corners` mode and half-pixel centres only for `pytorch_half_pixel` (`half_pixel` gets the legacy grid `dst·in/out`); `nearest_mode` is never read (the device takes `⌊dst·in/out⌋`, rounded for `align_corners`); cubic and other modes are refused; output sizes are `⌊in · scale⌋` from constant scales, or `sizes[2:4]`. When the shapes are declared, each axis's sampling is compared with ONNX's",
            Rule::KeptAxisAtOne => "with `keepdims=1` (ONNX's default) the parser puts the reduced axis back at position 1 whatever `axis` was: another output shape unless `axis` is 1",
            Rule::AvgPoolAiCpu => "a 1-D or 2-D kernel of more than 255 elements or a stride above 63 runs on the AI CPU, which pads with zeros, always counts them and pools VALID: `count_include_pad=0` over padding, `ceil_mode=1` adding a window, and `auto_pad` change the result",
            Rule::SoftmaxOneAxis => "normalizes over the one axis `axis`; before opset 13 ONNX flattens every axis from `axis` on, so a non-last axis changes meaning (Softmax: a note, its V11 parser asks for a fusion pass); LogSoftmax without `axis` uses −1 where ONNX before 13 uses 1",
        }
    }

    /// How the device reading (`atc-check --device-reading`) writes the rule in ONNX.
    pub fn reading(self) -> &'static str {
        match self {
            Rule::Resize => "always re-expressed when the input's height and width are declared: the device's output size, then per resized axis a `Gather` by the device's source indices (nearest) or a `MatMul` by its interpolation matrix (linear); undeclared sizes: no reading",
            Rule::KeptAxisAtOne => "`keepdims=1` off axis 1: `keepdims=0` and `Unsqueeze` at 1 (a 1-D input: no reading)",
            Rule::AvgPoolAiCpu => "on the AI CPU path (always, also where the result is ONNX's): `Pad` with zeros and a VALID `AveragePool` without `ceil_mode`",
            Rule::SoftmaxOneAxis => "where the device's axis differs from ONNX's reading: that one axis (`axis` set, or `Transpose` to the last axis and back before opset 13); undeclared rank where it matters: no reading",
        }
    }
}

/// What one plugin does, for the op types whose plugin was read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plugin {
    /// The ONNX op type it converts.
    pub op: &'static str,
    /// The plugin file under [`PLUGIN_DIR`].
    pub source: &'static str,
    /// The Ascend operator(s) it builds.
    pub becomes: &'static str,
    /// What it does with each attribute it knows.
    pub attributes: &'static [Attribute],
    /// Input positions the parser needs as constants (initializers).
    pub constant_inputs: &'static [usize],
    /// Input positions the parser does not pass on: the device computes as if they were
    /// absent.
    pub dropped_inputs: &'static [usize],
    /// Output positions that come out int32 where ONNX says int64.
    pub int32_outputs: &'static [usize],
    /// The rule that needs the node's context, if any.
    pub rule: Option<Rule>,
}

const fn read(name: &'static str) -> Attribute {
    Attribute {
        name,
        treatment: Treatment::Read,
    }
}

const fn ignored(name: &'static str, onnx: Value, device: Value) -> Attribute {
    Attribute {
        name,
        treatment: Treatment::Ignored { onnx, device },
    }
}

const fn refused(name: &'static str, allowed: Value) -> Attribute {
    Attribute {
        name,
        treatment: Treatment::Refused { allowed },
    }
}

/// An `AveragePool` whose kernel has more elements than this runs on the AI CPU
/// ([`Rule::AvgPoolAiCpu`]).
pub const AI_CPU_KERNEL_ELEMENTS: i64 = 255;

/// An `AveragePool` with a stride above this runs on the AI CPU ([`Rule::AvgPoolAiCpu`]).
pub const AI_CPU_STRIDE: i64 = 63;

/// The plugins read for this table.
pub const PLUGINS: [Plugin; 11] = [
    Plugin {
        op: "ArgMax",
        source: "argmax_plugin.cc",
        becomes: "ArgMaxV2 (int64), ExpandDims at axis 1 when keepdims=1",
        attributes: &[read("axis"), read("keepdims"), refused("select_last_index", Value::Int(0))],
        constant_inputs: &[],
        dropped_inputs: &[],
        int32_outputs: &[],
        rule: Some(Rule::KeptAxisAtOne),
    },
    Plugin {
        op: "ArgMin",
        source: "argmin_plugin.cc",
        becomes: "ArgMin (int32), ExpandDims at axis 1 when keepdims=1",
        attributes: &[read("axis"), read("keepdims"), refused("select_last_index", Value::Int(0))],
        constant_inputs: &[],
        dropped_inputs: &[],
        int32_outputs: &[0],
        rule: Some(Rule::KeptAxisAtOne),
    },
    Plugin {
        op: "AveragePool",
        source: "average_pool_plugin.cc",
        becomes: "AvgPoolV2 (AI Core); AvgPool on the AI CPU (NHWC, PadV2 with zeros, VALID) when the kernel has more than 255 elements or a stride is above 63",
        attributes: &[read("auto_pad"), read("ceil_mode"), read("count_include_pad"), read("kernel_shape"), read("pads"), read("strides")],
        constant_inputs: &[],
        dropped_inputs: &[],
        int32_outputs: &[],
        rule: Some(Rule::AvgPoolAiCpu),
    },
    Plugin {
        op: "Gemm",
        source: "gemm_plugin.cc",
        becomes: "MatMulV2 (plus bias)",
        attributes: &[read("transA"), read("transB"), ignored("alpha", Value::Float(1.0), Value::Float(1.0)), ignored("beta", Value::Float(1.0), Value::Float(1.0))],
        constant_inputs: &[],
        dropped_inputs: &[],
        int32_outputs: &[],
        rule: None,
    },
    Plugin {
        op: "GRU",
        source: "gru_plugin.cc",
        becomes: "DynamicGRUV2",
        attributes: &[read("direction"), read("hidden_size"), ignored("linear_before_reset", Value::Int(0), Value::Int(1))],
        constant_inputs: &[],
        dropped_inputs: &[],
        int32_outputs: &[],
        rule: None,
    },
    Plugin {
        op: "LSTM",
        source: "lstm_plugin.cc",
        becomes: "DynamicRNN",
        attributes: &[read("direction"), read("hidden_size"), ignored("clip", Value::Absent, Value::Absent), ignored("input_forget", Value::Int(0), Value::Int(0))],
        constant_inputs: &[],
        // The peepholes `P`.
        dropped_inputs: &[7],
        int32_outputs: &[],
        rule: None,
    },
    Plugin {
        op: "LogSoftmax",
        source: "logsoftmax_plugin.cc",
        becomes: "LogSoftmaxV2 over the one axis `axis`, −1 when not set (ONNX: 1 before opset 13)",
        attributes: &[read("axis")],
        constant_inputs: &[],
        dropped_inputs: &[],
        int32_outputs: &[],
        rule: Some(Rule::SoftmaxOneAxis),
    },
    Plugin {
        op: "Softmax",
        source: "softmax_plugin.cc",
        becomes: "SoftmaxV2 over the one axis `axis` (default 1 before opset 13, −1 from 13)",
        attributes: &[read("axis")],
        constant_inputs: &[],
        dropped_inputs: &[],
        int32_outputs: &[],
        rule: Some(Rule::SoftmaxOneAxis),
    },
    Plugin {
        op: "Resize",
        source: "resize_plugin.cc",
        becomes: "ResizeNearestNeighborV2 (nearest) or ResizeBilinearV2 (linear), sizes from Shape·scales or from sizes[2:4]",
        attributes: &[read("mode"), read("coordinate_transformation_mode"), ignored("nearest_mode", Value::Absent, Value::Absent)],
        constant_inputs: &[2, 3],
        dropped_inputs: &[],
        int32_outputs: &[],
        rule: Some(Rule::Resize),
    },
    Plugin {
        op: "TopK",
        source: "topk_plugin.cc",
        becomes: "TopK (k as an int32 constant)",
        attributes: &[read("axis"), read("largest"), read("sorted")],
        constant_inputs: &[1],
        dropped_inputs: &[],
        int32_outputs: &[1],
        rule: None,
    },
    Plugin {
        op: "ReduceSum",
        source: "reduce_sum_plugin.cc",
        becomes: "ReduceSum",
        attributes: &[read("axes"), read("keepdims"), read("noop_with_empty_axes")],
        constant_inputs: &[],
        dropped_inputs: &[],
        int32_outputs: &[],
        rule: None,
    },
];

/// The plugin record of `op`, when its plugin was read.
pub fn plugin(op: &str) -> Option<&'static Plugin> {
    PLUGINS.iter().find(|p| p.op == op)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atc::{ALLOWED_OPS, TYPED_OPS};

    fn show(v: Value) -> String {
        match v {
            Value::Int(i) => i.to_string(),
            Value::Float(f) => format!("{f:?}"),
            Value::Absent => "unset".into(),
        }
    }

    fn opsets(list: &[i64]) -> String {
        // Runs of consecutive opsets as `a–b`.
        let mut parts: Vec<String> = Vec::new();
        let mut i = 0;
        while i < list.len() {
            let mut j = i;
            while j + 1 < list.len() && list[j + 1] == list[j] + 1 {
                j += 1;
            }
            parts.push(if i == j {
                list[i].to_string()
            } else {
                format!("{}–{}", list[i], list[j])
            });
            i = j + 1;
        }
        parts.join(", ")
    }

    /// `docs/atc.md`, generated from the tables of this module.
    fn document() -> String {
        let mut doc = String::from(
            "# What ATC's ONNX parser does with each operator\n\n\
             Generated from the table in `crates/onnx/src/cann.rs`; regenerate with\n\
             `CKPT_BLESS=1 cargo test --release --workspace --lib atc_document`.\n\n\
             Ascend's ATC reads an ONNX file through CANN's parser plugins, one per operator:\n\
             each registers the `ai.onnx` opsets it takes, reads some attributes and not\n\
             others, may need inputs to be constant, and builds an Ascend operator whose\n\
             meaning can differ from ONNX's. `ckpt atc-check MODEL.onnx` applies this table to\n\
             any ONNX file; every file `ckpt to-onnx` writes passes it, and `to-onnx` chooses\n\
             forms the device computes as ONNX does (below) or refuses naming the node.\n\n",
        );
        doc.push_str(&format!(
            "Source: {}, the `.cc` file named per operator. Limits: only the operators in the\n\
             first table had their plugin read; for the others `atc-check` checks the\n\
             registration only and says so. Rules that need shapes use the shapes the file\n\
             declares (graph inputs, outputs, `value_info`); without them they give a note.\n\
             Newer CANN releases may have changed plugins; their model opsets below come from\n\
             public reports, not from their sources.\n\n",
            source()
        ));
        doc.push_str("## CANN generations (`--cann`)\n\n| generation | model opsets | evidence |\n| --- | --- | --- |\n");
        for g in GENERATIONS {
            doc.push_str(&format!(
                "| `{}` | {} | {} |\n",
                g.name,
                opsets(g.opsets),
                g.evidence
            ));
        }
        doc.push_str(
            "\n## Operators whose plugin was read\n\n\
             | op | plugin | becomes | attributes | inputs | element types | rule |\n\
             | --- | --- | --- | --- | --- | --- | --- |\n",
        );
        for p in PLUGINS {
            let attributes: Vec<String> = p
                .attributes
                .iter()
                .map(|a| match a.treatment {
                    Treatment::Read => format!("`{}` read", a.name),
                    Treatment::Ignored { onnx, device } => format!(
                        "`{}` ignored (ONNX default {}, device {})",
                        a.name,
                        show(onnx),
                        show(device)
                    ),
                    Treatment::Refused { allowed } => {
                        format!("`{}` refused unless {}", a.name, show(allowed))
                    }
                })
                .collect();
            let list = |ks: &[usize]| -> String {
                ks.iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let mut inputs = Vec::new();
            if !p.constant_inputs.is_empty() {
                inputs.push(format!("constant: {}", list(p.constant_inputs)));
            }
            if !p.dropped_inputs.is_empty() {
                inputs.push(format!("not passed on: {}", list(p.dropped_inputs)));
            }
            let int32 = if p.int32_outputs.is_empty() {
                String::new()
            } else {
                format!(
                    "output {} comes out int32, not int64",
                    list(p.int32_outputs)
                )
            };
            doc.push_str(&format!(
                "| {} | `{}` | {} | {} | {} | {} | {} |\n",
                p.op,
                p.source,
                p.becomes,
                attributes.join("; "),
                inputs.join("; "),
                int32,
                p.rule.map_or("", Rule::describe)
            ));
        }
        doc.push_str(
            "\n## The device reading (`--device-reading`)\n\n\
             `ckpt atc-check MODEL.onnx --device-reading OUT.onnx` writes the model with each\n\
             node replaced by ONNX nodes computing what the parser turns it into, from the\n\
             table above: run it in any ONNX runtime to see what the `.om` would compute, and\n\
             compare with the model's reference. The interop tests run it on every file they\n\
             judge and compare it with torch. Per operator:\n\n\
             | op | device reading |\n| --- | --- |\n",
        );
        for p in PLUGINS {
            let mut parts: Vec<String> = p
                .attributes
                .iter()
                .filter_map(|a| match a.treatment {
                    Treatment::Ignored {
                        device: Value::Absent,
                        ..
                    } => Some(format!("`{}` dropped", a.name)),
                    Treatment::Ignored { device, .. } => {
                        Some(format!("`{}` set to {}", a.name, show(device)))
                    }
                    _ => None,
                })
                .collect();
            parts.extend(
                p.dropped_inputs
                    .iter()
                    .map(|k| format!("input {k} dropped")),
            );
            parts.extend(
                p.int32_outputs
                    .iter()
                    .map(|k| format!("output {k} cast to int32")),
            );
            parts.extend(p.rule.map(|r| r.reading().to_owned()));
            if parts.is_empty() {
                parts.push("the node as it is".into());
            }
            doc.push_str(&format!("| {} | {} |\n", p.op, parts.join("; ")));
        }
        doc.push_str(
            "\nLimits: only the operators above are read differently; every other node is\n\
             copied, so the reading is as good as the table (unread plugins may change meaning\n\
             too). Shapes come from the file's declarations: run ONNX shape inference first\n\
             (`onnx.shape_inference.infer_shapes_path`) so intermediate values have them. A\n\
             model ATC rejects, or with a node whose device meaning the reading cannot write\n\
             (named in the error), gets no reading (exit 1) rather than a partial one. The\n\
             values are ONNX's arithmetic on the device's sampling and shapes, not the Ascend\n\
             kernels' rounding (float16 accumulation on the AI Core is not modelled).\n",
        );
        doc.push_str(
            "\n## How `to-onnx` keeps the device's meaning\n\n\
             - **Resize** (2-D nearest and bilinear upsampling): written only where onnxruntime\n  \
             and the parser's reading compute torch's samples on every axis: the scale is the\n  \
             least `f32` not below `out/in` (so `⌊in · scale⌋` is the output size: the nearest\n  \
             `f32` loses a row for 7 → 31), linear uses `pytorch_half_pixel` or `align_corners`,\n  \
             an output axis of length 1 from a longer one is not sent to Resize, and nearest is\n  \
             used only where onnxruntime's `⌊dst / scale⌋` equals torch's `⌊dst · f32(in/out)⌋`\n  \
             (the device's rule). Elsewhere the resize is a MatMul by a constant interpolation\n  \
             matrix per axis, which every runtime computes alike.\n\
             - **ArgMax/ArgMin** with `keepdim` on an axis other than 1: `keepdims=0` and a\n  \
             `Reshape` that puts the axis back.\n\
             - **AveragePool** on the AI CPU path: refused, naming the node, when padding would\n  \
             not be counted or `ceil_mode` adds a window.\n\
             - **The atc command** printed by `to-onnx` uses `--dynamic_batch_size` for a\n  \
             dynamic batch alone and `--dynamic_dims` (2 to 100 profiles, never with\n  \
             `--dynamic_batch_size`) when other dimensions are dynamic.\n\n",
        );
        doc.push_str("## Registered op types and opsets\n\nEvery `ai.onnx::<opset>::<op>` the plugins register (anything else is ATC error E16002).\n\n| op | opsets |\n| --- | --- |\n");
        for (op, list) in REGISTERED {
            doc.push_str(&format!("| {op} | {} |\n", opsets(list)));
        }
        doc
    }

    /// `docs/atc.md` is generated from the table; `CKPT_BLESS=1` rewrites it.
    #[test]
    fn atc_document_is_current() {
        ckpt_base::generated_docs::assert_current("atc.md", &document(), "atc_document");
    }

    /// The exporter writes opsets 9–13; `Resize` only from 11 (it refuses upsampling
    /// below), which the parser registers from 10; `Mod` from 10, where ONNX defines it.
    #[test]
    fn every_op_the_exporter_may_write_is_registered_for_its_opsets() {
        for op in ALLOWED_OPS.iter().chain(&TYPED_OPS) {
            let list = registered(op);
            let from = match *op {
                "Resize" => 11,
                "Mod" => 10,
                _ => 9,
            };
            assert!(
                (from..=13).all(|v| list.contains(&v)),
                "{op} is registered for {list:?}"
            );
        }
        assert!(!registered("Resize").contains(&9));
    }

    /// The interop tier's op list (`tests/interop/atc_opset11_ops.txt`) is this table's
    /// opset-11 registrations plus `Constant`, which the parser maps itself.
    #[test]
    fn the_interop_op_list_is_the_tables_opset_11() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/interop/atc_opset11_ops.txt");
        let text = std::fs::read_to_string(path).unwrap();
        let mut listed: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        listed.sort_unstable();
        let mut table: Vec<&str> = REGISTERED
            .iter()
            .filter(|(_, list)| list.contains(&11))
            .map(|(op, _)| *op)
            .chain(["Constant"])
            .collect();
        table.sort_unstable();
        assert_eq!(listed, table);
    }

    #[test]
    fn every_plugin_record_is_registered_and_named_once() {
        for (k, p) in PLUGINS.iter().enumerate() {
            assert!(!registered(p.op).is_empty(), "{} has no registration", p.op);
            assert!(PLUGINS[..k].iter().all(|q| q.op != p.op), "{} twice", p.op);
        }
        let mut ops: Vec<&str> = REGISTERED.iter().map(|(op, _)| *op).collect();
        ops.dedup();
        assert_eq!(ops.len(), REGISTERED.len());
    }
}
