//! `histc` (`torch.histc`), `histogram.bin_ct` (`torch.histogram` with a bin count) and
//! `histogram.bins_tensor` (by constant edges) of a static tensor
//! ([`ckpt_aten::histogram`]): each entry's bin found as torch's kernel finds it (one
//! float32 division from the outer edges, truncated; for `histogram`, then a search among
//! the neighbouring `linspace` edges, each computed by torch's `linspace` rule; by edges,
//! the count of edges at or below it, which is where torch's binary search ends in sorted
//! edges), compared with every bin's number, the hits (or weights) summed per bin. Under a
//! dynamic batch the counts would add up every sample's entries: refused.

use crate::elem::ElemType;
use crate::graph::{Attr, GraphBuilder, Value, Weight};
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::histogram;
use ckpt_aten::program::{Argument, Node};
use ckpt_aten::spaced;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::{arg_error, OrShape};

/// Why a histogram is refused under a dynamic batch.
const MIXES: &str = "it counts the entries of the whole tensor, every sample's together, so its counts mix samples; export the program at a fixed batch (`--batch static`)";

/// Why `histogram` is refused with edges from the input's extrema.
const FUSED_EDGES: &str = "without `range` its edges come from the input's extrema through torch's linspace, which rounds `start + step·k` once (a fused multiply-add), and opset 11 has no fused multiply-add (a graph rounds the product and the sum apart), so an entry on an edge could fall in the neighbouring bin; give `range=(min, max)`";

/// The input's entries as a column, and the bins: from `left`, `width` wide in all.
struct Bins {
    /// `[count, 1]`.
    flat: Value,
    left: Edge,
    /// `right − left`, in float32.
    width: Edge,
    /// Whether each entry is inside `[left, right]` (NaN is not): `[count, 1]` bools.
    inside: Value,
    bins: u64,
}

/// An outer edge of the bins (or their width): a number known at export, or computed
/// from the input's extrema (`[1, 1]`).
enum Edge {
    Constant(Weight),
    Computed(Value),
}

impl Edge {
    fn operand(&self) -> Operand<'_> {
        match self {
            Edge::Constant(w) => Operand::Constant(w),
            Edge::Computed(v) => Operand::Activation(v),
        }
    }
}

fn activation(v: &Value) -> Operand<'_> {
    Operand::Activation(v)
}

impl Lowering<'_, '_> {
    /// `histc(self, bins, min, max)`: `[bins]` float32 counts.
    pub(super) fn histc(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let bins = histogram::check_bins(args.int("bins").or_shape()?).map_err(arg_error)?;
        let (min, max) = (args.float("min").or_shape()?, args.float("max").or_shape()?);
        let flat = self.column(args, scope)?;
        let g = &mut self.g;
        let edges = if histogram::edges_from_input(min, max) {
            Extremes::Input
        } else {
            let (l, r) = histogram::outer_edges(min, max, None).map_err(arg_error)?;
            Extremes::Known(l, r)
        };
        let b = edges.bins(g, scope, flat, bins)?;
        let at = guess(g, scope, &b)?;
        let last = g.constant_scalar(&format!("{scope}.last"), (bins - 1) as f32);
        let bin = emit::binary(g, "Min", scope, activation(&at), Operand::Constant(&last))?;
        let counts = count(g, scope, bins, &b.inside, &bin, None)?;
        self.bind(node, 0, counts)
    }

    /// `histogram.bin_ct(self, bins, range, weight, density)`: `[bins]` float32 counts (or
    /// summed weights, or densities) and the `[bins + 1]` edges.
    pub(super) fn histogram(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let bins = histogram::check_bins(args.int("bins").or_shape()?).map_err(arg_error)?;
        let range = match args.get("range") {
            None | Some(Argument::None) => None,
            Some(Argument::Floats(r)) if r.len() == 2 => Some((r[0], r[1])),
            Some(other) => return Err(arg_error(format!("histogram's range is {}", other.kind()))),
        };
        let density = args.bool("density").or_shape()?;
        let flat = self.column(args, scope)?;
        let weight = self.weight_column(args, scope, &flat)?;
        let Some(range) = range else {
            return Err(arg_error(FUSED_EDGES.into()));
        };
        let (l, r) = histogram::histogram_outer_edges(Some(range), None).map_err(arg_error)?;
        let edges = spaced::linspace(l, r, bins + 1);
        let g = &mut self.g;
        let values: Vec<f64> = edges.iter().map(|&e| f64::from(e)).collect();
        let table = g.typed_constant(
            &format!("{scope}.edges"),
            vec![bins + 1],
            &values,
            ElemType::Float32,
        )?;
        let b = Extremes::Known(l, r).bins(g, scope, flat, bins)?;
        let at = guess(g, scope, &b)?;
        let bin = searched(g, scope, &b, &table, &at)?;
        let mut hist = count(g, scope, bins, &b.inside, &bin, weight.as_ref())?;
        if density {
            hist = densities(g, scope, hist, &edges)?;
        }
        self.bind(node, 0, hist)?;
        self.bind_folded_f32(node, 1, vec![bins + 1], edges)
    }

    /// `histogram.bins_tensor(self, bins, weight, density)` by constant edges `bins`
    /// (sorted, free of NaN): `[bins − 1]` float32 counts (or summed weights, or
    /// densities) and the edges.
    pub(super) fn histogram_by_edges(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("bins").or_shape()?;
        if !self.is_constant(name) {
            return Err(arg_error(format!(
                "histogram by the computed edges `{name}`; only constant edges are exported"
            )));
        }
        let table = self.constant_tensor(name)?;
        if table.rank() != 1 {
            return Err(arg_error(
                "histogram by edges that are not a 1-D tensor".into(),
            ));
        }
        let edges = table.to_f32();
        let bins = histogram::check_edges(&edges).map_err(arg_error)?;
        let density = args.bool("density").or_shape()?;
        let flat = self.column(args, scope)?;
        let weight = self.weight_column(args, scope, &flat)?;
        let g = &mut self.g;
        let values: Vec<f64> = edges.iter().map(|&e| f64::from(e)).collect();
        let row = g.typed_constant(
            &format!("{scope}.edges"),
            vec![1, bins + 1],
            &values,
            ElemType::Float32,
        )?;
        let left = Edge::Constant(g.constant_scalar(&format!("{scope}.left"), edges[0]));
        let last = edges[bins as usize];
        let right = Edge::Constant(g.constant_scalar(&format!("{scope}.right"), last));
        let inside = inside(g, scope, &flat, &left, &right)?;
        // The edges at or below each entry, counted: where torch's search ends.
        let over = emit::binary(g, "Less", scope, activation(&flat), Operand::Constant(&row))?;
        let at_or_below = g.unary("Not", scope, &over, vec![]);
        let at_or_below = emit::cast(g, scope, &at_or_below, ElemType::Float32);
        let found = g.reduce("ReduceSum", scope, &at_or_below, &[1], true)?;
        let one = g.constant_scalar(&format!("{scope}.one"), 1.0);
        let bin = emit::binary(g, "Sub", scope, activation(&found), Operand::Constant(&one))?;
        let top = g.constant_scalar(&format!("{scope}.last"), (bins - 1) as f32);
        let bin = emit::binary(g, "Min", scope, activation(&bin), Operand::Constant(&top))?;
        let mut hist = count(g, scope, bins, &inside, &bin, weight.as_ref())?;
        if density {
            hist = densities(g, scope, hist, &edges)?;
        }
        self.bind(node, 0, hist)?;
        self.bind_folded_f32(node, 1, vec![bins + 1], edges)
    }

    /// `histogram`'s `weight`, when given, as a `[count, 1]` column like the input's
    /// `flat`.
    fn weight_column(
        &mut self,
        args: &Args<'_>,
        scope: &str,
        flat: &Value,
    ) -> Result<Option<Value>, OnnxError> {
        let Some(w) = args.optional_tensor("weight").or_shape()? else {
            return Ok(None);
        };
        let w = self.lifted_activation(w)?;
        let entries: u64 = w.shape().iter().product();
        let w = self.g.reshape(scope, &w, &[entries, 1])?;
        if w.shape() != flat.shape() {
            return Err(arg_error(
                "histogram's weight has another shape than its input".into(),
            ));
        }
        Ok(Some(w))
    }

    /// The entries of `self` as a `[count, 1]` column of a static tensor; refused under a
    /// dynamic batch.
    fn column(&mut self, args: &Args<'_>, scope: &str) -> Result<Value, OnnxError> {
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        if !self.is_lifted() {
            return Err(arg_error(MIXES.into()));
        }
        if self.g.opset().version() < 11 {
            return Err(arg_error(
                "a histogram compares float32 bins with Equal, which takes floats from opset 11; pass --opset 11".into(),
            ));
        }
        let count: u64 = x.shape().iter().product();
        self.g.reshape(scope, &x, &[count, 1])
    }
}

/// Where the outer edges come from.
enum Extremes {
    /// Known at export (float32).
    Known(f32, f32),
    /// The input's extrema, widened by 1 each way when they are equal (`histc`'s rule;
    /// `histogram` takes its edges from the input only through a fused multiply-add, and
    /// is refused there).
    Input,
}

impl Extremes {
    fn bins(
        self,
        g: &mut GraphBuilder,
        scope: &str,
        flat: Value,
        bins: u64,
    ) -> Result<Bins, OnnxError> {
        let (left, right, width) = match self {
            Extremes::Known(l, r) => {
                let mut edge = |hint: &str, v: f32| {
                    Edge::Constant(g.constant_scalar(&format!("{scope}.{hint}"), v))
                };
                (edge("left", l), edge("right", r), edge("width", r - l))
            }
            Extremes::Input => {
                let low = g.reduce("ReduceMin", scope, &flat, &[0, 1], true)?;
                let high = g.reduce("ReduceMax", scope, &flat, &[0, 1], true)?;
                let same = emit::binary(g, "Equal", scope, activation(&low), activation(&high))?;
                let widen = emit::cast(g, scope, &same, ElemType::Float32);
                let left = g.sub(scope, &low, &widen)?;
                let right = emit::binary(g, "Add", scope, activation(&high), activation(&widen))?;
                let width = g.sub(scope, &right, &left)?;
                (
                    Edge::Computed(left),
                    Edge::Computed(right),
                    Edge::Computed(width),
                )
            }
        };
        let inside = inside(g, scope, &flat, &left, &right)?;
        Ok(Bins {
            flat,
            left,
            width,
            inside,
            bins,
        })
    }
}

/// Each entry's bin by one division, `⌊(x − left)·bins / (right − left)⌋` (`[count, 1]`).
fn guess(g: &mut GraphBuilder, scope: &str, b: &Bins) -> Result<Value, OnnxError> {
    let from_left = emit::binary(g, "Sub", scope, activation(&b.flat), b.left.operand())?;
    let bins = g.constant_scalar(&format!("{scope}.bins"), b.bins as f32);
    let scaled = g.mul_constant(scope, &from_left, &bins)?;
    let at = emit::binary(g, "Div", scope, activation(&scaled), b.width.operand())?;
    Ok(g.unary("Floor", scope, &at, vec![]))
}

/// Edge `k` (float32 whole numbers of any shape) of the `table` of edges.
fn edge_at(g: &mut GraphBuilder, scope: &str, table: &Weight, k: &Value) -> Value {
    let index = emit::cast(g, scope, k, ElemType::Int64);
    emit::single(g.typed_node(
        "Gather",
        scope,
        vec![table.name().to_owned(), index.name().to_owned()],
        vec![("axis", Attr::Int(0))],
        vec![(k.shape().to_vec(), ElemType::Float32)],
    ))
}

/// `histogram`'s bin: among the edges `pos − 1 … pos + 1` of guess `at` (within the
/// `bins + 1`), the last at or below the entry, the right edge in the last bin.
fn searched(
    g: &mut GraphBuilder,
    scope: &str,
    b: &Bins,
    table: &Weight,
    at: &Value,
) -> Result<Value, OnnxError> {
    let one = g.constant_scalar(&format!("{scope}.one"), 1.0);
    let zero = g.constant_scalar(&format!("{scope}.zero"), 0.0);
    // An entry outside the edges (or NaN) searches from bin 0: `count` skips it.
    let at = &emit::typed(
        g,
        "Where",
        scope,
        [b.inside.name(), at.name(), zero.name()],
        at.shape(),
        ElemType::Float32,
    );
    let below = emit::binary(g, "Sub", scope, activation(at), Operand::Constant(&one))?;
    let first = emit::binary(
        g,
        "Max",
        scope,
        activation(&below),
        Operand::Constant(&zero),
    )?;
    let two = g.constant_scalar(&format!("{scope}.two"), 2.0);
    let end = emit::binary(g, "Add", scope, activation(at), Operand::Constant(&two))?;
    let edges = g.constant_scalar(&format!("{scope}.edges"), (b.bins + 1) as f32);
    let end = emit::binary(g, "Min", scope, activation(&end), Operand::Constant(&edges))?;
    // Past the last edge only when outside the window: read the last one instead.
    let last_edge = g.constant_scalar(&format!("{scope}.last_edge"), b.bins as f32);
    let mut found = None;
    for j in 0..3u8 {
        let k = if j == 0 {
            first.clone()
        } else {
            let by = g.constant_scalar(&format!("{scope}.by"), f32::from(j));
            emit::binary(g, "Add", scope, activation(&first), Operand::Constant(&by))?
        };
        let within = emit::binary(g, "Less", scope, activation(&k), activation(&end))?;
        let read = emit::binary(
            g,
            "Min",
            scope,
            activation(&k),
            Operand::Constant(&last_edge),
        )?;
        let edge = edge_at(g, scope, table, &read);
        let over = emit::binary(g, "Greater", scope, activation(&edge), activation(&b.flat))?;
        let at_or_below = g.unary("Not", scope, &over, vec![]);
        let hit = emit::binary(
            g,
            "And",
            scope,
            activation(&at_or_below),
            activation(&within),
        )?;
        let hit = emit::cast(g, scope, &hit, ElemType::Float32);
        found = Some(match found {
            None => hit,
            Some(sum) => g.add(scope, &sum, &hit)?,
        });
    }
    let found = found.ok_or_else(|| arg_error("a search window of no edge".into()))?;
    let after = g.add(scope, &first, &found)?;
    let bin = emit::binary(g, "Sub", scope, activation(&after), Operand::Constant(&one))?;
    let last = g.constant_scalar(&format!("{scope}.last"), (b.bins - 1) as f32);
    emit::binary(g, "Min", scope, activation(&bin), Operand::Constant(&last))
}

/// Whether each entry is inside `[left, right]` (NaN is outside: every comparison with a
/// NaN is false), `[count, 1]` bools.
fn inside(
    g: &mut GraphBuilder,
    scope: &str,
    flat: &Value,
    left: &Edge,
    right: &Edge,
) -> Result<Value, OnnxError> {
    let below = emit::binary(g, "Less", scope, activation(flat), left.operand())?;
    let above = emit::binary(g, "Greater", scope, activation(flat), right.operand())?;
    let outside = emit::binary(g, "Or", scope, activation(&below), activation(&above))?;
    let nan = emit::typed(
        g,
        "IsNaN",
        scope,
        [flat.name()],
        flat.shape(),
        ElemType::Bool,
    );
    let outside = emit::binary(g, "Or", scope, activation(&outside), activation(&nan))?;
    Ok(g.unary("Not", scope, &outside, vec![]))
}

/// The hits (or `weight`s, `[count, 1]`) of the entries `inside` the outer edges, summed
/// per bin: `[bins]`.
fn count(
    g: &mut GraphBuilder,
    scope: &str,
    bins: u64,
    inside: &Value,
    bin: &Value,
    weight: Option<&Value>,
) -> Result<Value, OnnxError> {
    let numbers: Vec<f64> = (0..bins).map(|k| k as f64).collect();
    let numbers = g.typed_constant(
        &format!("{scope}.numbers"),
        vec![bins],
        &numbers,
        ElemType::Float32,
    )?;
    let hits = emit::binary(
        g,
        "Equal",
        scope,
        activation(bin),
        Operand::Constant(&numbers),
    )?;
    let hits = emit::binary(g, "And", scope, activation(&hits), activation(inside))?;
    let mut hits = emit::cast(g, scope, &hits, ElemType::Float32);
    if let Some(w) = weight {
        hits = emit::binary(g, "Mul", scope, activation(&hits), activation(w))?;
    }
    g.reduce("ReduceSum", scope, &hits, &[0], false)
}

/// `hist` (`[bins]`) divided by its total and each bin's width between `edges`
/// (`histogramdd_out`'s `density`).
fn densities(
    g: &mut GraphBuilder,
    scope: &str,
    hist: Value,
    edges: &[f32],
) -> Result<Value, OnnxError> {
    let total = g.reduce("ReduceSum", scope, &hist, &[0], true)?;
    let hist = g.div(scope, &hist, &total)?;
    let widths: Vec<f64> = edges.windows(2).map(|w| f64::from(w[1] - w[0])).collect();
    let widths = g.typed_constant(
        &format!("{scope}.widths"),
        vec![widths.len() as u64],
        &widths,
        ElemType::Float32,
    )?;
    g.div_constant(scope, &hist, &widths)
}
