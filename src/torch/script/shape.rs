//! Shape propagation for the ops in [`super::ops`]: the per-sample shape (without the batch)
//! of each op's output, computed as torch does from its inputs' shapes and its arguments.
//! The lowering checks every shape it builds against these, so a disagreement between the
//! two is an error, never a wrong graph.

use crate::aten::program::{Argument, Node};

/// The largest size of one dimension, and of an argument such as a stride or padding: with
/// every operand below it, the arithmetic here cannot overflow.
pub const MAX_DIM: u64 = 1 << 31;
/// The most elements one sample of an activation may have.
pub const MAX_SAMPLE: u64 = 1 << 40;

/// Checks a per-sample shape against [`MAX_DIM`] and [`MAX_SAMPLE`].
pub fn check(shape: &[u64]) -> Result<(), String> {
    let numel = shape.iter().try_fold(1u64, |n, &d| {
        (d <= MAX_DIM).then(|| n.checked_mul(d)).flatten()
    });
    match numel {
        Some(n) if n <= MAX_SAMPLE => Ok(()),
        _ => Err(format!(
            "per-sample shape {shape:?} is larger than this exporter handles (2^31 per dimension, 2^40 elements)"
        )),
    }
}

/// What a tensor argument is, shape-wise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dims {
    /// An activation: the batch, then these sizes.
    PerSample(Vec<u64>),
    /// A stored tensor (no batch): these sizes.
    Stored(Vec<u64>),
}

/// A node's arguments by schema name; absent ones take the schema's default.
struct Args<'a> {
    node: &'a Node,
}

impl<'a> Args<'a> {
    fn get(&self, name: &str) -> Option<&'a Argument> {
        self.node
            .inputs
            .iter()
            .find(|a| a.name == name)
            .map(|a| &a.arg)
    }

    fn int(&self, name: &str, default: i64) -> Result<i64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(Argument::Int(i)) => Ok(*i),
            Some(other) => Err(format!(
                "argument `{name}` is {}, expected an int",
                other.kind()
            )),
        }
    }

    fn optional_int(&self, name: &str) -> Result<Option<i64>, String> {
        match self.get(name) {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::Int(i)) => Ok(Some(*i)),
            Some(other) => Err(format!(
                "argument `{name}` is {}, expected an int or None",
                other.kind()
            )),
        }
    }

    fn bool(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.get(name) {
            None => Ok(default),
            Some(Argument::Bool(b)) => Ok(*b),
            Some(other) => Err(format!(
                "argument `{name}` is {}, expected a bool",
                other.kind()
            )),
        }
    }

    /// A size list of `n` entries; one entry is repeated; absent or empty gives `default`
    /// (repeated the same way).
    fn sizes(&self, name: &str, n: usize, default: &[i64]) -> Result<Vec<u64>, String> {
        let values = match self.get(name) {
            None | Some(Argument::None) => default.to_vec(),
            Some(Argument::Ints(v)) if v.is_empty() => default.to_vec(),
            Some(Argument::Ints(v)) => v.clone(),
            Some(Argument::Int(i)) => vec![*i],
            Some(other) => {
                return Err(format!(
                    "argument `{name}` is {}, expected ints",
                    other.kind()
                ))
            }
        };
        let values = match values.as_slice() {
            [one] => vec![*one; n],
            v if v.len() == n => values,
            _ => {
                return Err(format!(
                    "argument `{name}` has {} entries, expected {n}",
                    values.len()
                ))
            }
        };
        values
            .into_iter()
            .map(|v| {
                u64::try_from(v)
                    .ok()
                    .filter(|&v| v <= MAX_DIM)
                    .ok_or_else(|| format!("argument `{name}` has an entry {v} out of range"))
            })
            .collect()
    }

    fn ints(&self, name: &str) -> Result<Option<&'a [i64]>, String> {
        match self.get(name) {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::Ints(v)) => Ok(Some(v)),
            Some(other) => Err(format!(
                "argument `{name}` is {}, expected ints",
                other.kind()
            )),
        }
    }
}

/// What to do when a transpose moves the batch: what an attention layer traced with
/// gradients on does (`nn.MultiheadAttention` moves the batch behind the tokens).
pub(super) const MOVED_BATCH_HINT: &str = "if this is attention (nn.MultiheadAttention, nn.TransformerEncoderLayer), trace the model in eval mode under `torch.no_grad()` (torch then records its fused kernels, which are exported) or export it with torch.export";

/// A per-sample axis of full-rank axis `dim` (negative counts from the end); the batch,
/// axis 0, is refused.
fn axis(dim: i64, per_sample_rank: usize) -> Result<usize, String> {
    let rank = per_sample_rank as i64 + 1;
    let a = if dim < 0 { dim + rank } else { dim };
    match a {
        0 => Err(format!("it works along dimension {dim}, the batch")),
        a if (1..rank).contains(&a) => Ok(a as usize - 1),
        _ => Err(format!("dimension {dim} is out of range for rank {rank}")),
    }
}

/// `(size + 2·pad − dilation·(kernel − 1) − 1) / stride + 1`, rounded as torch rounds.
/// Every operand is at most [`MAX_DIM`], so nothing here overflows.
fn window(
    size: u64,
    kernel: u64,
    stride: u64,
    pad: u64,
    dilation: u64,
    ceil: bool,
) -> Result<u64, String> {
    let span = dilation * kernel.saturating_sub(1) + 1;
    let padded = size + 2 * pad;
    if stride == 0 || kernel == 0 || padded < span {
        return Err(format!(
            "a window of {kernel} (stride {stride}, padding {pad}) does not fit size {size}"
        ));
    }
    let steps = padded - span;
    let mut out = if ceil {
        steps.div_ceil(stride)
    } else {
        steps / stride
    } + 1;
    if ceil && (out - 1) * stride >= size + pad {
        out -= 1;
    }
    Ok(out)
}

/// numpy broadcasting, right-aligned; `b` may not have more dimensions than `a`.
fn broadcast(a: &[u64], b: &[u64]) -> Result<Vec<u64>, String> {
    if b.len() > a.len() {
        return Err(format!(
            "broadcasting {a:?} with {b:?} would reach across the batch"
        ));
    }
    let offset = a.len() - b.len();
    a.iter()
        .enumerate()
        .map(|(i, &x)| match i.checked_sub(offset).map(|j| b[j]) {
            None => Ok(x),
            Some(y) if y == x || y == 1 => Ok(x),
            Some(y) if x == 1 => Ok(y),
            Some(y) => Err(format!(
                "sizes {a:?} and {b:?} do not broadcast ({x} vs {y})"
            )),
        })
        .collect()
}

/// The sizes of a factory's output (a constant: no batch), from its arguments; `op` is the
/// overload (`arange.default`). Sizes that are the batch never reach here (the batch is
/// not an int argument), so every size is fixed.
pub fn factory(node: &Node, op: &str) -> Result<Vec<u64>, String> {
    let args = Args { node };
    let number = |name: &str| match args.get(name) {
        Some(Argument::Int(i)) => Ok(*i as f64),
        Some(Argument::Float(f)) => Ok(*f),
        other => Err(format!(
            "argument `{name}` is {}, expected a number",
            other.map_or("missing", Argument::kind)
        )),
    };
    let dims = match op {
        "arange.default" | "arange.start" | "arange.start_step" => {
            let start = if op == "arange.default" {
                0.0
            } else {
                number("start")?
            };
            let end = number("end")?;
            let step = if op == "arange.start_step" {
                number("step")?
            } else {
                1.0
            };
            let count = ((end - start) / step).ceil().max(0.0);
            if step == 0.0 || !(0.0..=MAX_SAMPLE as f64).contains(&count) {
                return Err(format!("arange({start}, {end}, {step}) is out of range"));
            }
            vec![count as u64]
        }
        "scalar_tensor.default" => vec![],
        _ => args
            .ints("size")?
            .ok_or("argument `size` is missing")?
            .iter()
            .map(|&d| u64::try_from(d).map_err(|_| format!("size {d}")))
            .collect::<Result<_, _>>()?,
    };
    check(&dims)?;
    Ok(dims)
}

/// The per-sample shape of an element-wise op on two operands (`None`: a number).
fn elementwise(a: Option<Dims>, b: Option<Dims>) -> Result<Vec<u64>, String> {
    match (a, b) {
        (Some(Dims::PerSample(a)), Some(Dims::PerSample(b))) if a.len() == b.len() => {
            broadcast(&a, &b)
        }
        (Some(Dims::PerSample(a)), Some(Dims::PerSample(b))) => Err(format!(
            "element-wise op of per-sample ranks {} and {}",
            a.len(),
            b.len()
        )),
        (Some(Dims::PerSample(a)), Some(Dims::Stored(c)))
        | (Some(Dims::Stored(c)), Some(Dims::PerSample(a))) => {
            // A leading 1 of a full-rank parameter (a position embedding) is
            // broadcast along the batch.
            let c = match c.split_first() {
                Some((1, rest)) if c.len() == a.len() + 1 => rest,
                _ => &c,
            };
            broadcast(&a, c)
        }
        (Some(Dims::PerSample(a)), None) | (None, Some(Dims::PerSample(a))) => Ok(a),
        _ => Err("an element-wise op on constants alone is not exported".into()),
    }
}

/// The spatial rank an op's name ends with (`max_pool3d.default` → 3).
fn spatial_rank(op: &str) -> usize {
    match op.split('.').next().and_then(|name| name.strip_suffix('d')) {
        Some(name) if name.ends_with('1') => 1,
        Some(name) if name.ends_with('3') => 3,
        _ => 2,
    }
}

/// The per-sample shape of `node`'s output (`node.target` without `torch.ops.aten.`).
/// `dims` gives each tensor value's shape; view/reshape shapes are computed by the caller.
pub fn infer(
    node: &Node,
    op: &str,
    dims: &dyn Fn(&str) -> Option<Dims>,
) -> Result<Vec<u64>, String> {
    let args = Args { node };
    let tensor = |name: &str| -> Result<Dims, String> {
        match args.get(name) {
            Some(Argument::Tensor(t)) => dims(t).ok_or_else(|| format!("`{t}` has no known shape")),
            Some(other) => Err(format!(
                "argument `{name}` is {}, expected a tensor",
                other.kind()
            )),
            None => Err(format!("argument `{name}` is missing")),
        }
    };
    let activation = |name: &str| -> Result<Vec<u64>, String> {
        match tensor(name)? {
            Dims::PerSample(s) => Ok(s),
            Dims::Stored(_) => Err(format!("argument `{name}` is a stored tensor, where an activation (with the batch) is expected")),
        }
    };
    let stored = |name: &str| -> Result<Vec<u64>, String> {
        match tensor(name)? {
            Dims::Stored(s) => Ok(s),
            Dims::PerSample(_) => Err(format!(
                "argument `{name}` is computed, where a parameter is expected"
            )),
        }
    };
    if let Some(operands) = masked(op) {
        let mut shapes = Vec::with_capacity(operands.len());
        for name in operands {
            match args.get(name) {
                Some(Argument::Int(_) | Argument::Float(_) | Argument::Bool(_)) => {}
                _ => match tensor(name)? {
                    Dims::PerSample(s) => shapes.push(s),
                    Dims::Stored(s) if s.iter().all(|&d| d == 1) => {}
                    Dims::Stored(s) => {
                        return Err(format!(
                            "argument `{name}` is a stored tensor of sizes {s:?}; only computed tensors and numbers are exported here"
                        ))
                    }
                },
            }
        }
        let first = shapes
            .first()
            .ok_or("an op on constants alone is not exported")?;
        return shapes.iter().try_fold(first.clone(), |acc, s| {
            if s.len() == acc.len() {
                broadcast(&acc, s)
            } else {
                Err(format!("operands of per-sample shapes {shapes:?}"))
            }
        });
    }
    let operand = |name: &str| -> Result<Option<Dims>, String> {
        match args.get(name) {
            Some(Argument::Int(_) | Argument::Float(_)) => Ok(None),
            _ => tensor(name).map(Some),
        }
    };
    match op {
        "conv1d.default"
        | "conv2d.default"
        | "conv3d.default"
        | "conv_transpose1d.default"
        | "conv_transpose2d.input"
        | "conv_transpose3d.input" => {
            let x = activation("input")?;
            let w = stored("weight")?;
            let rank = x.len().saturating_sub(1);
            let (Some((_, sizes)), Some((&[w0, w1], kernel))) =
                (x.split_first(), w.split_first_chunk::<2>())
            else {
                return Err(format!("convolution of per-sample {x:?} by {w:?}"));
            };
            if kernel.len() != rank || !(1..=3).contains(&rank) || w.iter().any(|&d| d > MAX_DIM) {
                return Err(format!("convolution of per-sample {x:?} by {w:?}"));
            }
            let stride = args.sizes("stride", rank, &[1])?;
            let pad = args.sizes("padding", rank, &[0])?;
            let dil = args.sizes("dilation", rank, &[1])?;
            let groups = u64::try_from(args.int("groups", 1)?)
                .ok()
                .filter(|&g| (1..=MAX_DIM).contains(&g))
                .ok_or("groups out of range")?;
            let out = if op.starts_with("conv_transpose") {
                let out_pad = args.sizes("output_padding", rank, &[0])?;
                let size = |i: usize| {
                    ((sizes[i].saturating_sub(1)) * stride[i]
                        + dil[i] * kernel[i].saturating_sub(1)
                        + out_pad[i]
                        + 1)
                    .checked_sub(2 * pad[i])
                    .ok_or_else(|| {
                        format!(
                            "transposed convolution of size {} gives an empty output",
                            sizes[i]
                        )
                    })
                };
                let channels = w1.checked_mul(groups).ok_or("output channels overflow")?;
                [Ok(channels)]
                    .into_iter()
                    .chain((0..rank).map(size))
                    .collect::<Result<Vec<u64>, String>>()?
            } else {
                [Ok(w0)]
                    .into_iter()
                    .chain(
                        (0..rank)
                            .map(|i| window(sizes[i], kernel[i], stride[i], pad[i], dil[i], false)),
                    )
                    .collect::<Result<Vec<u64>, String>>()?
            };
            Ok(out)
        }
        "constant_pad_nd.default"
        | "pad.default"
        | "reflection_pad2d.default"
        | "replication_pad2d.default" => {
            let x = activation("self")?;
            let list = args
                .ints(if op.ends_with("pad2d.default") {
                    "padding"
                } else {
                    "pad"
                })?
                .ok_or("the pad list is missing")?;
            if !list.len().is_multiple_of(2)
                || list.len() / 2 > x.len()
                || list.iter().any(|&p| !(0..=MAX_DIM as i64).contains(&p))
            {
                return Err(format!("pad list {list:?} for per-sample {x:?} (pairs of non-negative sizes, the batch not padded)"));
            }
            let mut out = x.clone();
            for (k, pair) in list.chunks(2).enumerate() {
                let axis = x.len() - 1 - k;
                out[axis] += (pair[0] + pair[1]) as u64;
            }
            Ok(out)
        }
        "batch_norm.default"
        | "layer_norm.default"
        | "dropout.default"
        | "instance_norm.default"
        | "group_norm.default" => activation("input"),
        // torch names the in-place form's tensor `self`.
        "dropout_.default" => activation("self"),
        "_transformer_encoder_layer_fwd.default" => activation("src"),
        // The attention output (the weights, its second output, are never exported).
        "_native_multi_head_attention.default" => activation("query"),
        "lstm.input" | "gru.input" => {
            let x = activation("input")?;
            if !args.bool("batch_first", false)? {
                return Err(
                    "batch_first=False reads the sequence time-major, its batch second, which a trace cannot follow; use batch_first=True, or export the model with torch.export and a dynamic batch".into(),
                );
            }
            let [_, hidden] = recurrent_states(node, dims)?;
            let directions = if args.bool("bidirectional", false)? {
                2
            } else {
                1
            };
            match x.as_slice() {
                &[seq, _] => Ok(vec![seq, directions * hidden]),
                _ => Err(format!(
                    "a recurrent layer reads per-sample (sequence, features), got {x:?}"
                )),
            }
        }
        "linear.default" => {
            let x = activation("input")?;
            let w = stored("weight")?;
            match (x.split_last(), w.first()) {
                (Some((_, rest)), Some(&out)) => Ok(rest.iter().copied().chain([out]).collect()),
                _ => Err(format!("linear of per-sample {x:?} by {w:?}")),
            }
        }
        "matmul.default" => {
            // Two activations of one rank with the same leading sizes, or an activation
            // times a stored `[K, N]` matrix.
            let a = activation("self")?;
            let (b, broadcast) = match tensor("other")? {
                Dims::PerSample(b) => (b, false),
                Dims::Stored(b) => (b, true),
            };
            let fits = |rows: &[u64], lead: &[u64], k: u64| {
                let (rows_lead, b_lead) = (&rows[..rows.len() - 1], &lead[..lead.len() - 1]);
                lead.last() == Some(&k)
                    && if broadcast {
                        b_lead.is_empty()
                    } else {
                        rows_lead == b_lead
                    }
            };
            match (a.split_last(), b.split_last()) {
                (Some((&k, rows)), Some((&n, lead)))
                    if !rows.is_empty() && !lead.is_empty() && fits(rows, lead, k) =>
                {
                    Ok(rows.iter().copied().chain([n]).collect())
                }
                _ => Err(format!("matmul of per-sample {a:?} by {b:?}")),
            }
        }
        "max_pool1d.default" | "max_pool2d.default" | "max_pool3d.default"
        | "avg_pool1d.default" | "avg_pool2d.default" | "avg_pool3d.default" => {
            let x = activation("self")?;
            let rank = spatial_rank(op);
            let Some((&c, sizes)) = x.split_first().filter(|(_, s)| s.len() == rank) else {
                return Err(format!("{rank}-D pooling of per-sample {x:?}"));
            };
            let kernel = args.sizes("kernel_size", rank, &[0])?;
            let kernel_i64: Vec<i64> = kernel.iter().map(|&k| k as i64).collect();
            let stride = args.sizes("stride", rank, &kernel_i64)?;
            let pad = args.sizes("padding", rank, &[0])?;
            let dil = if op.starts_with("max_pool") {
                args.sizes("dilation", rank, &[1])?
            } else {
                vec![1; rank]
            };
            let ceil = args.bool("ceil_mode", false)?;
            [Ok(c)]
                .into_iter()
                .chain(
                    (0..rank).map(|i| window(sizes[i], kernel[i], stride[i], pad[i], dil[i], ceil)),
                )
                .collect()
        }
        "adaptive_avg_pool1d.default"
        | "adaptive_avg_pool2d.default"
        | "adaptive_avg_pool3d.default" => {
            let x = activation("self")?;
            let rank = spatial_rank(op);
            let out = args.sizes("output_size", rank, &[0])?;
            match x.split_first() {
                Some((&c, sizes)) if sizes.len() == rank => {
                    Ok([c].into_iter().chain(out).collect())
                }
                _ => Err(format!("adaptive pooling of per-sample {x:?}")),
            }
        }
        "mean.dim" | "sum.dim_IntList" | "amax.default" | "amin.default" | "var.dim"
        | "std.dim" => {
            let x = activation("self")?;
            let keep = args.bool("keepdim", false)?;
            let axes: Vec<usize> = match args.ints("dim")? {
                None | Some([]) => {
                    return Err("a reduction over every dimension reduces the batch".into())
                }
                Some(d) => d
                    .iter()
                    .map(|&d| axis(d, x.len()))
                    .collect::<Result<_, _>>()?,
            };
            Ok(x.iter()
                .enumerate()
                .filter_map(|(i, &d)| match (axes.contains(&i), keep) {
                    (false, _) => Some(d),
                    (true, true) => Some(1),
                    (true, false) => None,
                })
                .collect())
        }
        "add.Tensor" | "add_.Tensor" | "sub.Tensor" | "mul.Tensor" | "mul_.Tensor"
        | "div.Tensor" | "maximum.default" | "minimum.default" | "rsub.Scalar"
        | "remainder.Tensor" => elementwise(operand("self")?, operand("other")?),
        "addcmul.default" | "addcdiv.default" => {
            let term = elementwise(operand("tensor1")?, operand("tensor2")?)?;
            elementwise(operand("self")?, Some(Dims::PerSample(term)))
        }
        "stack.default" => {
            let Some(Argument::Tensors(names)) = args.get("tensors") else {
                return Err("argument `tensors` is not a list of tensors".into());
            };
            let shapes = names
                .iter()
                .map(|n| match dims(n) {
                    Some(Dims::PerSample(s)) => Ok(s),
                    _ => Err(format!("`{n}` is not an activation")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let first = shapes.first().ok_or("stack of no tensors")?;
            if shapes.iter().any(|s| s != first) {
                return Err(format!(
                    "stack of per-sample shapes {shapes:?}, which differ"
                ));
            }
            // The new dimension may go after every existing one.
            let a = axis(args.int("dim", 0)?, first.len() + 1)
                .map_err(|e| format!("stacking where {e}"))?;
            let mut out = first.clone();
            out.insert(a, shapes.len() as u64);
            Ok(out)
        }
        // Attention over the last two axes: the query's tokens, the value's features.
        "scaled_dot_product_attention.default" => {
            let q = activation("query")?;
            let v = activation("value")?;
            match (q.split_last(), v.last()) {
                (Some((_, rest)), Some(&features)) if q.len() == v.len() => {
                    Ok(rest.iter().copied().chain([features]).collect())
                }
                _ => Err(format!(
                    "attention of per-sample query {q:?} and value {v:?}"
                )),
            }
        }
        "cat.default" => {
            let Some(Argument::Tensors(names)) = args.get("tensors") else {
                return Err("argument `tensors` is not a list of tensors".into());
            };
            let shapes = names
                .iter()
                .map(|n| match dims(n) {
                    Some(Dims::PerSample(s)) => Ok(s),
                    _ => Err(format!("`{n}` is not an activation")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let first = shapes.first().ok_or("cat of no tensors")?.clone();
            let a = axis(args.int("dim", 0)?, first.len())?;
            let mut out = first.clone();
            out[a] = 0;
            for s in &shapes {
                let same_elsewhere = s.len() == first.len()
                    && s.iter()
                        .zip(&first)
                        .enumerate()
                        .all(|(i, (x, y))| i == a || x == y);
                if !same_elsewhere {
                    return Err(format!(
                        "cat of per-sample shapes {shapes:?} along axis {}",
                        a + 1
                    ));
                }
                out[a] += s[a];
            }
            Ok(out)
        }
        "flatten.using_ints" => {
            let x = activation("self")?;
            let start = axis(args.int("start_dim", 0)?, x.len()).map_err(|e| {
                format!("flattening from {e}, which folds the batch into the features")
            })?;
            let end = axis(args.int("end_dim", -1)?, x.len())?;
            if end < start {
                return Err(format!("flatten from axis {} to {}", start + 1, end + 1));
            }
            let merged: u64 = x[start..=end].iter().product();
            Ok(x[..start]
                .iter()
                .copied()
                .chain([merged])
                .chain(x[end + 1..].iter().copied())
                .collect())
        }
        "slice.Tensor" => {
            let x = activation("self")?;
            let dim = args.int("dim", 0)?;
            let start = args.optional_int("start")?.unwrap_or(0);
            let end = args.optional_int("end")?.unwrap_or(i64::MAX);
            let step = args.int("step", 1)?;
            if step < 1 {
                return Err(format!("slice step {step}"));
            }
            match axis(dim, x.len()) {
                Ok(a) => {
                    let len = x[a] as i64;
                    let clamp = |v: i64| if v < 0 { (v + len).max(0) } else { v.min(len) };
                    let (s, e) = (clamp(start), clamp(end));
                    let mut out = x.clone();
                    out[a] = if e > s {
                        ((e - s - 1) / step + 1) as u64
                    } else {
                        0
                    };
                    Ok(out)
                }
                Err(_) if start == 0 && end == i64::MAX && step == 1 => Ok(x),
                Err(e) => Err(format!("slicing [{start}:{end}:{step}]: {e}")),
            }
        }
        "narrow.default" => {
            let mut x = activation("self")?;
            let a = axis(args.int("dim", 0)?, x.len())?;
            let length = args.int("length", 0)?;
            x[a] = u64::try_from(length)
                .ok()
                .filter(|&l| l <= x[a])
                .ok_or_else(|| format!("narrow to {length} of an axis of {}", x[a]))?;
            Ok(x)
        }
        "index_select.default" => {
            let mut x = activation("self")?;
            let a = axis(args.int("dim", 0)?, x.len())?;
            match tensor("index")? {
                Dims::Stored(d) if d.len() <= 1 => {
                    x[a] = d.first().copied().unwrap_or(1);
                    Ok(x)
                }
                other => Err(format!(
                    "index_select by {other:?}; only a constant 1-D index is exported"
                )),
            }
        }
        "permute.default" => {
            let x = activation("self")?;
            let order = args.ints("dims")?.ok_or("argument `dims` is missing")?;
            let axes = order
                .iter()
                .skip(1)
                .map(|&d| axis(d, x.len()))
                .collect::<Result<Vec<_>, _>>()?;
            let mut sorted = axes.clone();
            sorted.sort_unstable();
            sorted.dedup();
            if order.len() != x.len() + 1 || sorted.len() != x.len() {
                return Err(format!(
                    "permutation {order:?} does not keep the batch first or is not one of rank {}",
                    x.len() + 1
                ));
            }
            Ok(axes.iter().map(|&a| x[a]).collect())
        }
        "select.int" => {
            let mut x = activation("self")?;
            let a = axis(args.int("dim", 0)?, x.len())?;
            let index = args.int("index", 0)?;
            let size = x[a] as i64;
            if !(-size..size).contains(&index) {
                return Err(format!(
                    "index {index} is out of range for a dimension of {size}"
                ));
            }
            x.remove(a);
            Ok(x)
        }
        "unsqueeze.default" => {
            let mut x = activation("self")?;
            // The new dimension may go after every existing one.
            let a = axis(args.int("dim", 0)?, x.len() + 1)
                .map_err(|e| format!("unsqueeze where {e}"))?;
            x.insert(a, 1);
            Ok(x)
        }
        "squeeze.dim" => {
            let mut x = activation("self")?;
            let dim = match args.get("dim") {
                Some(Argument::Int(d)) => *d,
                _ => return Err("squeeze of other than one named dimension is not exported (it could drop the batch at batch 1); name the dimension".into()),
            };
            let a = axis(dim, x.len())?;
            // As torch: a dimension not of size 1 is kept.
            if x[a] == 1 {
                x.remove(a);
            }
            Ok(x)
        }
        "unflatten.int" => {
            let mut x = activation("self")?;
            let a = axis(args.int("dim", 0)?, x.len())?;
            let sizes = args.ints("sizes")?.ok_or("argument `sizes` is missing")?;
            let parts = unflattened(x[a], sizes)?;
            x.splice(a..=a, parts);
            Ok(x)
        }
        "transpose.int" => {
            let mut x = activation("self")?;
            // Attention traced with gradients on swaps the batch and the tokens.
            let hint = |e: String| format!("{e}; {MOVED_BATCH_HINT}");
            let a = axis(args.int("dim0", 0)?, x.len()).map_err(hint)?;
            let b = axis(args.int("dim1", 0)?, x.len()).map_err(hint)?;
            x.swap(a, b);
            Ok(x)
        }
        _ if op.starts_with("upsample_") => {
            let x = activation("input")?;
            let rank = spatial_rank(op);
            let Some((&c, sizes)) = x.split_first().filter(|(_, s)| s.len() == rank) else {
                return Err(format!("{rank}-D upsampling of per-sample {x:?}"));
            };
            let out: Option<Vec<u64>> = match (args.get("output_size"), args.get("scale_factors")) {
                (Some(Argument::Ints(size)), _) if size.len() == rank => size
                    .iter()
                    .map(|&s| {
                        u64::try_from(s)
                            .ok()
                            .filter(|&s| (1..=MAX_DIM).contains(&s))
                    })
                    .collect(),
                (None | Some(Argument::None), Some(Argument::Floats(f))) if f.len() == rank => {
                    sizes
                        .iter()
                        .zip(f)
                        .map(|(&n, &f)| {
                            let o = (n as f64 * f).floor();
                            (f > 0.0 && o >= 1.0 && o <= MAX_DIM as f64).then_some(o as u64)
                        })
                        .collect()
                }
                _ => None,
            };
            let out = out.ok_or_else(|| {
                format!("upsampling needs {rank} positive output sizes or scale factors")
            })?;
            Ok([c].into_iter().chain(out).collect())
        }
        "embedding.default" => {
            let ids = activation("indices")?;
            match stored("weight")?.as_slice() {
                [_, width] => Ok(ids.into_iter().chain([*width]).collect()),
                w => Err(format!("an embedding table of sizes {w:?}; it must be 2-D")),
            }
        }
        "argmax.default" | "argmin.default" => {
            let mut x = activation("self")?;
            let dim = args
                .optional_int("dim")?
                .ok_or("argmax/argmin over the whole tensor mixes the batch; give `dim`")?;
            let a = axis(dim, x.len())?;
            if args.bool("keepdim", false)? {
                x[a] = 1;
            } else {
                x.remove(a);
            }
            Ok(x)
        }
        _ => {
            // Element-wise unary ops, hardtanh, contiguous/clone/detach, dtype
            // conversions: the input's shape.
            activation("self")
        }
    }
}

/// The operands of the broadcasting ops on masks and integer tensors (comparisons,
/// logical ops, `where`, `masked_fill`), by schema name.
fn masked(op: &str) -> Option<&'static [&'static str]> {
    match op.split('.').next()? {
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "logical_and" | "logical_or" | "__and__"
        | "__or__" => Some(&["self", "other"]),
        "where" => Some(&["condition", "self", "other"]),
        "masked_fill" => Some(&["self", "mask", "value"]),
        _ => None,
    }
}

/// The sizes of an `lstm`/`gru` node's final states other than the batch (which sits
/// between them): `[num_layers · directions, hidden]`, the hidden size read from the
/// first `weight_hh` (`[gates · hidden, hidden]`, the second of `params`).
pub fn recurrent_states(
    node: &Node,
    dims: &dyn Fn(&str) -> Option<Dims>,
) -> Result<[u64; 2], String> {
    let args = Args { node };
    let layers = u64::try_from(args.int("num_layers", 1)?)
        .ok()
        .filter(|l| (1..=MAX_DIM).contains(l))
        .ok_or("num_layers out of range")?;
    let directions = if args.bool("bidirectional", false)? {
        2
    } else {
        1
    };
    let Some(Argument::Tensors(params)) = args.get("params") else {
        return Err("argument `params` is not a list of weights".into());
    };
    match params.get(1).and_then(|w| dims(w)) {
        Some(Dims::Stored(w)) => match w.as_slice() {
            &[_, hidden] if hidden <= MAX_DIM => Ok([layers * directions, hidden]),
            _ => Err(format!(
                "the recurrent weight {w:?} is not [gates · hidden, hidden]"
            )),
        },
        _ => Err("the second of `params` is not a stored recurrent weight".into()),
    }
}

/// The sizes `unflatten` splits a dimension of `size` into (one may be `-1`).
fn unflattened(size: u64, sizes: &[i64]) -> Result<Vec<u64>, String> {
    let holes = sizes.iter().filter(|&&s| s == -1).count();
    let known = sizes
        .iter()
        .filter(|&&s| s != -1)
        .map(|&s| u64::try_from(s).ok().filter(|&s| s > 0 && s <= MAX_DIM))
        .try_fold(1u64, |n, s| s.and_then(|s| n.checked_mul(s)));
    let fill = match (holes, known) {
        (0, Some(k)) if k == size => 1,
        (1, Some(k)) if size.is_multiple_of(k) => size / k,
        _ => return Err(format!("unflatten of a dimension of {size} into {sizes:?}")),
    };
    Ok(sizes
        .iter()
        .map(|&s| if s == -1 { fill } else { s as u64 })
        .collect())
}

/// The most pieces one split may make (each becomes an ONNX output).
pub const MAX_PIECES: u64 = 4096;

/// How a splitting op divides one dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pieces<'a> {
    /// `split.Tensor`: pieces of this size, the last one possibly smaller.
    Size(i64),
    /// `split_with_sizes`: exactly these sizes.
    Sizes(&'a [i64]),
    /// `chunk`: this many pieces at most, each of the rounded-up share.
    Chunks(i64),
    /// `unbind`: pieces of 1 (the dimension is then dropped).
    Each,
    /// `tensor_split.indices`: cut before each of these indices.
    Indices(&'a [i64]),
    /// `tensor_split.sections`: this many pieces, the first `size % n` one longer
    /// (`torch._refs.tensor_split`).
    Sections(i64),
}

/// The sizes of the pieces a dimension of `size` is split into, as torch splits it. Empty
/// pieces (which ONNX `Split` cannot express at every opset) are refused.
pub fn piece_sizes(size: u64, how: Pieces<'_>) -> Result<Vec<u64>, String> {
    if size == 0 {
        return Err("splitting an empty dimension".into());
    }
    let even = |piece: u64| -> Result<Vec<u64>, String> {
        let count = size.div_ceil(piece);
        if count > MAX_PIECES {
            return Err(format!(
                "splitting size {size} into {count} pieces (at most {MAX_PIECES} are exported)"
            ));
        }
        Ok((0..count).map(|i| piece.min(size - i * piece)).collect())
    };
    match how {
        Pieces::Size(piece) => match u64::try_from(piece) {
            Ok(piece) if piece > 0 => even(piece),
            _ => Err(format!("split size {piece} is not positive")),
        },
        Pieces::Chunks(chunks) => match u64::try_from(chunks) {
            Ok(chunks) if chunks > 0 => even(size.div_ceil(chunks)),
            _ => Err(format!("chunk count {chunks} is not positive")),
        },
        Pieces::Each => even(1),
        Pieces::Sections(n) => match u64::try_from(n) {
            Ok(n) if n > 0 && n <= MAX_PIECES => Ok((0..n)
                .map(|i| size / n + u64::from(i < size % n))
                .collect::<Vec<_>>())
            .and_then(|sizes| {
                if sizes.contains(&0) {
                    Err(format!("{n} sections of size {size} make an empty piece"))
                } else {
                    Ok(sizes)
                }
            }),
            _ => Err(format!("section count {n} is not in 1..={MAX_PIECES}")),
        },
        Pieces::Indices(cuts) => {
            let mut sizes = Vec::with_capacity(cuts.len() + 1);
            let mut start = 0u64;
            for &cut in cuts.iter().chain(std::iter::once(&(size as i64))) {
                let at = if cut < 0 { cut + size as i64 } else { cut };
                let at = u64::try_from(at).unwrap_or(0).min(size);
                match at.checked_sub(start) {
                    Some(piece) if piece > 0 => sizes.push(piece),
                    _ => {
                        return Err(format!(
                            "tensor_split at {cuts:?} of size {size} makes an empty piece"
                        ))
                    }
                }
                start = at;
            }
            Ok(sizes)
        }
        Pieces::Sizes(sizes) => {
            let sizes = sizes
                .iter()
                .map(|&s| u64::try_from(s).ok().filter(|&s| s > 0 && s <= MAX_DIM))
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| format!("split sizes {sizes:?} are not all positive"))?;
            if sizes.iter().sum::<u64>() != size {
                return Err(format!(
                    "split sizes {sizes:?} do not add up to the dimension's {size}"
                ));
            }
            Ok(sizes)
        }
    }
}

/// How `node` (`split.Tensor`, `split_with_sizes.default`, `chunk.default`, `unbind.int`,
/// `tensor_split`, their `unsafe_*` forms, `hsplit`/`vsplit`/`dsplit`) splits, and the
/// argument names it reads; `None` for any other op. The `unsafe_*` forms differ from
/// their safe ones only in aliasing, and `hsplit`/`vsplit`/`dsplit` are `tensor_split`
/// along a fixed dimension ([`split_dim`]), as `torch._refs` defines them.
pub fn pieces_of<'n>(node: &'n Node, op: &str) -> Option<Result<Pieces<'n>, String>> {
    let args = Args { node };
    Some(match op {
        "split.Tensor" | "unsafe_split.Tensor" => args.int("split_size", 0).map(Pieces::Size),
        "split_with_sizes.default" | "unsafe_split_with_sizes.default" => {
            match args.ints("split_sizes") {
                Ok(Some(sizes)) => Ok(Pieces::Sizes(sizes)),
                Ok(None) => Err("argument `split_sizes` is missing".into()),
                Err(e) => Err(e),
            }
        }
        "chunk.default" | "unsafe_chunk.default" => args.int("chunks", 0).map(Pieces::Chunks),
        "unbind.int" => Ok(Pieces::Each),
        "tensor_split.sections" => args.int("sections", 0).map(Pieces::Sections),
        "hsplit.int" | "vsplit.int" | "dsplit.int" => args.int("sections", 0).map(Pieces::Sections),
        "tensor_split.indices" | "hsplit.array" | "vsplit.array" | "dsplit.array" => {
            match args.ints("indices") {
                Ok(Some(cuts)) => Ok(Pieces::Indices(cuts)),
                Ok(None) => Err("argument `indices` is missing".into()),
                Err(e) => Err(e),
            }
        }
        _ => return None,
    })
}

/// The dimension splitting op `op` (see [`pieces_of`]) of a rank-`rank` tensor splits:
/// `hsplit` the second (the first of a 1-D tensor), `vsplit` the first, `dsplit` the
/// third (`torch._refs.hsplit`, …), every other op its `dim` argument.
pub fn split_dim(node: &Node, op: &str, rank: usize) -> Result<i64, String> {
    Ok(match op.split('.').next() {
        Some("hsplit") => i64::from(rank > 1),
        Some("vsplit") => 0,
        Some("dsplit") => 2,
        _ => Args { node }.int("dim", 0)?,
    })
}

/// The per-sample shapes of the pieces a splitting op (see [`pieces_of`]) returns.
pub fn infer_pieces(
    node: &Node,
    op: &str,
    dims: &dyn Fn(&str) -> Option<Dims>,
) -> Result<Vec<Vec<u64>>, String> {
    let how = pieces_of(node, op).ok_or_else(|| format!("`{op}` is not a splitting op"))??;
    let args = Args { node };
    let x = match args.get("self") {
        Some(Argument::Tensor(t)) => match dims(t) {
            Some(Dims::PerSample(s)) => s,
            _ => return Err(format!("`{t}` is not a computed tensor")),
        },
        _ => return Err("argument `self` is not a tensor".into()),
    };
    let a = axis(args.int("dim", 0)?, x.len())?;
    Ok(piece_sizes(x[a], how)?
        .into_iter()
        .map(|size| {
            let mut shape = x.clone();
            if how == Pieces::Each {
                shape.remove(a);
            } else {
                shape[a] = size;
            }
            shape
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_round_as_torch() {
        // resnet stem: 224 → 112 (conv 7/2/3) → 56 (pool 3/2/1).
        assert_eq!(window(224, 7, 2, 3, 1, false), Ok(112));
        assert_eq!(window(112, 3, 2, 1, 1, false), Ok(56));
        // ceil_mode: 5 with kernel 2 stride 2 → 3; the last window must start inside.
        assert_eq!(window(5, 2, 2, 0, 1, true), Ok(3));
        assert_eq!(window(4, 2, 2, 0, 1, true), Ok(2));
        assert!(window(2, 5, 1, 0, 1, false).is_err());
    }

    #[test]
    fn dimensions_picked_added_dropped_and_split() {
        let dims = |n: &str| match n {
            "x" => Some(Dims::PerSample(vec![3, 1, 6])),
            _ => None,
        };
        let on = |input: &str, op: &str, rest: &str| {
            let x = format!(r#"{{"name": "self", "arg": {{"as_tensor": {{"name": "{input}"}}}}}}"#);
            infer(&node(&format!("{x}, {rest}")), op, &dims)
        };
        let dim = |d: i64| format!(r#"{{"name": "dim", "arg": {{"as_int": {d}}}}}"#);
        let index = |i: i64| format!(r#", {{"name": "index", "arg": {{"as_int": {i}}}}}"#);
        // googlenet's x[:, 0], and x[:, -1].
        assert_eq!(on("x", "select.int", &(dim(1) + &index(0))), Ok(vec![1, 6]));
        assert_eq!(
            on("x", "select.int", &(dim(1) + &index(-1))),
            Ok(vec![1, 6])
        );
        assert!(on("x", "select.int", &(dim(1) + &index(3))).is_err());
        assert!(on("x", "select.int", &(dim(0) + &index(0)))
            .unwrap_err()
            .contains("the batch"));
        assert_eq!(on("x", "unsqueeze.default", &dim(1)), Ok(vec![1, 3, 1, 6]));
        assert_eq!(on("x", "unsqueeze.default", &dim(-1)), Ok(vec![3, 1, 6, 1]));
        assert!(on("x", "unsqueeze.default", &dim(0)).is_err());
        // A dimension not of size 1 is kept, as torch keeps it.
        assert_eq!(on("x", "squeeze.dim", &dim(2)), Ok(vec![3, 6]));
        assert_eq!(on("x", "squeeze.dim", &dim(1)), Ok(vec![3, 1, 6]));
        let sizes = r#"{"name": "sizes", "arg": {"as_ints": [2, -1]}}"#;
        assert_eq!(
            on("x", "unflatten.int", &format!("{}, {sizes}", dim(3))),
            Ok(vec![3, 1, 2, 3])
        );
        assert!(on("x", "unflatten.int", &format!("{}, {sizes}", dim(1))).is_err());
    }

    fn node(inputs: &str) -> Node {
        serde_json::from_str(&format!(
            r#"{{"target": "t", "outputs": [], "inputs": [{inputs}]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn slices_and_permutations() {
        let dims = |n: &str| (n == "x").then(|| Dims::PerSample(vec![5, 4, 6]));
        let x = r#"{"name": "self", "arg": {"as_tensor": {"name": "x"}}}"#;
        let slice = |rest: &str| infer(&node(&format!("{x}, {rest}")), "slice.Tensor", &dims);
        let every_other = r#"{"name": "dim", "arg": {"as_int": 1}}, {"name": "start", "arg": {"as_int": 1}}, {"name": "step", "arg": {"as_int": 2}}"#;
        // x[:, 1::2] of 5 → indices 1 and 3.
        assert_eq!(slice(every_other), Ok(vec![2, 4, 6]));
        let huge_step = r#"{"name": "dim", "arg": {"as_int": -1}}, {"name": "step", "arg": {"as_int": 9223372036854775807}}"#;
        assert_eq!(slice(huge_step), Ok(vec![5, 4, 1]));
        let batch_part =
            r#"{"name": "dim", "arg": {"as_int": 0}}, {"name": "end", "arg": {"as_int": 1}}"#;
        assert!(slice(batch_part).unwrap_err().contains("the batch"));
        let permute = |order: &str| {
            let dims_arg = format!(r#"{{"name": "dims", "arg": {{"as_ints": {order}}}}}"#);
            infer(&node(&format!("{x}, {dims_arg}")), "permute.default", &dims)
        };
        assert_eq!(permute("[0, 2, 3, 1]"), Ok(vec![4, 6, 5]));
        assert!(permute("[1, 0, 2, 3]").unwrap_err().contains("the batch"));
        assert!(permute("[0, 1, 1, 2]").is_err());
    }

    #[test]
    fn recurrent_outputs_follow_the_layers_directions_and_hidden_size() {
        let dims = |n: &str| match n {
            "x" => Some(Dims::PerSample(vec![7, 4])),
            "w_ih" => Some(Dims::Stored(vec![20, 4])),
            "w_hh" => Some(Dims::Stored(vec![20, 5])),
            _ => None,
        };
        let lstm = |flags: &str| {
            node(&format!(
                r#"{{"name": "input", "arg": {{"as_tensor": {{"name": "x"}}}}}},
                   {{"name": "params", "arg": {{"as_tensors": [{{"name": "w_ih"}}, {{"name": "w_hh"}}]}}}},
                   {{"name": "num_layers", "arg": {{"as_int": 3}}}}, {flags}"#
            ))
        };
        let both = lstm(
            r#"{"name": "bidirectional", "arg": {"as_bool": true}}, {"name": "batch_first", "arg": {"as_bool": true}}"#,
        );
        assert_eq!(infer(&both, "lstm.input", &dims), Ok(vec![7, 10]));
        assert_eq!(recurrent_states(&both, &dims), Ok([6, 5]));
        let time_major = lstm(r#"{"name": "batch_first", "arg": {"as_bool": false}}"#);
        let err = infer(&time_major, "lstm.input", &dims).unwrap_err();
        assert!(err.contains("batch_first=True"), "{err}");
    }

    #[test]
    fn pieces_split_as_torch_splits() {
        assert_eq!(piece_sizes(5, Pieces::Size(2)), Ok(vec![2, 2, 1]));
        assert_eq!(piece_sizes(4, Pieces::Size(9)), Ok(vec![4]));
        // chunk(5, 3): pieces of ceil(5/3) = 2 → 2, 2, 1; chunk(6, 4): 2, 2, 2 (3 pieces).
        assert_eq!(piece_sizes(5, Pieces::Chunks(3)), Ok(vec![2, 2, 1]));
        assert_eq!(piece_sizes(6, Pieces::Chunks(4)), Ok(vec![2, 2, 2]));
        assert_eq!(piece_sizes(3, Pieces::Each), Ok(vec![1, 1, 1]));
        assert_eq!(piece_sizes(4, Pieces::Sizes(&[1, 3])), Ok(vec![1, 3]));
        assert!(piece_sizes(4, Pieces::Sizes(&[1, 2])).is_err());
        assert!(piece_sizes(4, Pieces::Sizes(&[0, 4])).is_err());
        assert!(piece_sizes(4, Pieces::Chunks(0)).is_err());
        assert!(piece_sizes(4, Pieces::Size(-1)).is_err());
        assert!(piece_sizes(0, Pieces::Size(1)).is_err());
        let dims = |n: &str| (n == "x").then(|| Dims::PerSample(vec![6, 4, 4]));
        let x = r#"{"name": "self", "arg": {"as_tensor": {"name": "x"}}}"#;
        let chunk = node(&format!(
            r#"{x}, {{"name": "chunks", "arg": {{"as_int": 2}}}}, {{"name": "dim", "arg": {{"as_int": 1}}}}"#
        ));
        assert_eq!(
            infer_pieces(&chunk, "chunk.default", &dims),
            Ok(vec![vec![3, 4, 4], vec![3, 4, 4]])
        );
        let unbind = node(&format!(
            r#"{x}, {{"name": "dim", "arg": {{"as_int": -1}}}}"#
        ));
        assert_eq!(
            infer_pieces(&unbind, "unbind.int", &dims),
            Ok(vec![vec![6, 4]; 4])
        );
        let batch = node(&format!(
            r#"{x}, {{"name": "dim", "arg": {{"as_int": 0}}}}"#
        ));
        assert!(infer_pieces(&batch, "unbind.int", &dims)
            .unwrap_err()
            .contains("the batch"));
    }

    #[test]
    fn broadcasting_stays_per_sample() {
        assert_eq!(broadcast(&[4, 8, 8], &[4, 1, 1]), Ok(vec![4, 8, 8]));
        assert_eq!(broadcast(&[1, 8, 8], &[4, 8, 8]), Ok(vec![4, 8, 8]));
        assert!(broadcast(&[8], &[2, 8])
            .unwrap_err()
            .contains("across the batch"));
        assert!(axis(0, 3).unwrap_err().contains("the batch"));
        assert_eq!(axis(-1, 3), Ok(2));
    }
}
