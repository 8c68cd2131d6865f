//! Recurrent layers: `lstm.input`, `gru.input` and `rnn_tanh.input`, which `nn.LSTM`,
//! `nn.GRU` and `nn.RNN` record (torch.export without decompositions; a TorchScript trace's
//! `torch.lstm`/`torch.gru`/`torch.rnn_tanh`), as one ONNX `LSTM`/`GRU` node per layer, both
//! directions of a bidirectional layer in one.
//!
//! A tanh RNN is written as a GRU: ATC's operator list has no `RNN`, and CANN's GRU parser
//! reads only `hidden_size`, so the GRU's own activations (sigmoid gates, tanh candidate)
//! are what ATC computes. The update gate is held at 0 (no weights, input bias −10⁴) and
//! the reset gate at 1 (input bias +10⁴), so that ONNX's GRU step, the blend
//! `(1 − z)·tanh(W·x + b_W + r·(R·h + b_R)) + z·h`, is torch's
//! `tanh(W_ih·x + b_ih + W_hh·h + b_hh)`. A ReLU RNN has no such form: it is unrolled along
//! its sequence by the aten layer's expansion of `rnn_relu.input`, not lowered here.
//!
//! Layout. ONNX's recurrent ops (version 7, the one for every opset ATC takes; `layout`
//! arrived in opset 14) read `X` time-major, `(seq, batch, input)`, and write `Y` as
//! `(seq, directions, batch, hidden)` and the final states as `(directions, batch, hidden)`.
//! Those values stay inside this lowering ([`Moved`]); what it binds keeps the batch first:
//! the sequence goes in through one Transpose and comes out through a Transpose and a
//! Reshape to `(batch, seq, directions·hidden)`. A time-major call (`batch_first=False`)
//! reads a tensor whose batch is on dimension 1 (as `x.permute(1, 0, 2)` leaves it) and
//! binds its output the same way. The final states
//! `(layers·directions, batch, hidden)` are bound with the batch on dimension 1 when the
//! program reads them (`h_n[-1]`), else left unproduced.
//!
//! Weights. torch keeps per layer and direction `weight_ih` `[G·H, in]`, `weight_hh`
//! `[G·H, H]` and, with biases, `bias_ih` and `bias_hh` `[G·H]`, its gates stacked in its
//! order (LSTM i, f, g, o; GRU r, z, n). ONNX wants `W` `[D, G·H, in]`, `R` `[D, G·H, H]`
//! and `B` `[D, 2·G·H]` (input biases, then recurrent ones), gates in its order (LSTM
//! i, o, f, c; GRU z, r, h) and directions stacked: they are re-laid into new initializers.
//! GRU's `linear_before_reset=1` is torch's formula (the reset gate scales `W_hn·h + b_hn`).
//!
//! State. The initial state must be zero: the `zeros(layers·D, N, H)` torch makes when the
//! layer is called without one, or an all-zero constant. ONNX's default initial state is
//! zero, so it is left out; any other initial state is refused. Dropout between layers is
//! inactive in eval mode; a call in training mode is refused.
//!
//! Next: the general batch model (each value records which axis holds the batch) will let
//! this lowering bind ONNX's values as they are, `Y` `(T, D, N, H)` with the batch on axis
//! 2 and the states with it on axis 1, so that a time-major layer costs no Transpose, its
//! states follow a batch traced at a fixed size, and the TorchScript import (whose tensors
//! keep the batch first, so it takes `batch_first=True` only) can follow `permute(1, 0, 2)`.

use crate::graph::{Attr, GraphBuilder, Value, Weight};
use crate::OnnxError;
use ckpt_aten::program::Node;

use super::super::emit::single;
use super::super::lower::Lowering;
use super::super::tensor::{Rows, Tensor};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

/// The recurrent cell a call computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    Lstm,
    Gru,
    /// `nn.RNN(nonlinearity="tanh")`, written as a GRU with its gates held open.
    Tanh,
}

/// The input bias that holds a GRU gate shut (σ(−10⁴) = 0) or open (σ(10⁴) = 1) in float32
/// and in float16, whatever the step's input and state: the tanh RNN's gates have no
/// weights.
const GATE_HELD: f32 = 1e4;

/// What a stored recurrent tensor holds, for how a tanh RNN's becomes a GRU's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// `weight_ih` or `weight_hh`.
    Weight,
    /// `bias_ih`: the gates' biases are ONNX's input biases `Wb`.
    InputBias,
    /// `bias_hh`.
    RecurrentBias,
}

impl Cell {
    /// The ONNX op that computes it.
    fn op(self) -> &'static str {
        match self {
            Cell::Lstm => "LSTM",
            Cell::Gru | Cell::Tanh => "GRU",
        }
    }

    /// What torch calls it, for messages.
    fn torch_name(self) -> &'static str {
        match self {
            Cell::Lstm => "LSTM",
            Cell::Gru => "GRU",
            Cell::Tanh => "RNN",
        }
    }

    /// For each ONNX gate in ONNX's order, the index of torch's gate block holding it, or
    /// `None` for a gate torch does not have (the tanh RNN's update and reset gates).
    fn onnx_gate_order(self) -> &'static [Option<usize>] {
        match self {
            // torch i, f, g, o → ONNX i, o, f, c.
            Cell::Lstm => &[Some(0), Some(3), Some(1), Some(2)],
            // torch r, z, n → ONNX z, r, h.
            Cell::Gru => &[Some(1), Some(0), Some(2)],
            // torch's one block → ONNX's candidate h, after the held z and r.
            Cell::Tanh => &[None, None, Some(0)],
        }
    }

    /// The gate blocks torch stacks in each weight.
    fn torch_gates(self) -> u64 {
        self.onnx_gate_order().iter().flatten().count() as u64
    }

    /// The gate blocks ONNX stacks in each weight.
    fn onnx_gates(self) -> u64 {
        self.onnx_gate_order().len() as u64
    }

    /// The value of ONNX gate `gate`, which torch does not have, in a tensor of `part`.
    fn held(self, gate: usize, part: Part) -> f32 {
        match (part, gate) {
            (Part::InputBias, 0) => -GATE_HELD,
            (Part::InputBias, _) => GATE_HELD,
            _ => 0.0,
        }
    }

    /// How many state tensors the cell carries (and returns after its output): h, and c
    /// for an LSTM.
    fn states(self) -> usize {
        match self {
            Cell::Lstm => 2,
            Cell::Gru | Cell::Tanh => 1,
        }
    }
}

/// `values`, the cell's torch gate blocks of equal size stacked in torch's order, as ONNX's
/// blocks in ONNX's order (a gate torch does not have held by [`Cell::held`]); `None` when
/// `values` does not split into the cell's gates.
fn onnx_gates(values: &[f32], cell: Cell, part: Part) -> Option<Vec<f32>> {
    let gates = cell.torch_gates() as usize;
    if values.is_empty() || !values.len().is_multiple_of(gates) {
        return None;
    }
    let block = values.len() / gates;
    Some(
        cell.onnx_gate_order()
            .iter()
            .enumerate()
            .flat_map(|(gate, torch)| match torch {
                Some(g) => values[g * block..(g + 1) * block].to_vec(),
                None => vec![cell.held(gate, part); block],
            })
            .collect(),
    )
}

/// A call's configuration, from its arguments and its weights' sizes.
struct Recurrence {
    cell: Cell,
    layers: usize,
    bidirectional: bool,
    biased: bool,
    hidden: u64,
}

/// Stored tensors per layer and direction: the two weights, and with biases the two biases.
fn tensors_per_direction(biased: bool) -> usize {
    if biased {
        4
    } else {
        2
    }
}

impl Recurrence {
    fn directions(&self) -> u64 {
        if self.bidirectional {
            2
        } else {
            1
        }
    }

    fn per_direction(&self) -> usize {
        tensors_per_direction(self.biased)
    }

    /// The rows of one direction's torch weights: every gate's `hidden` rows.
    fn torch_rows(&self) -> u64 {
        self.cell.torch_gates() * self.hidden
    }

    /// The rows of one direction's ONNX weights.
    fn onnx_rows(&self) -> u64 {
        self.cell.onnx_gates() * self.hidden
    }

    /// ONNX's `direction` attribute.
    fn direction(&self) -> &'static str {
        if self.bidirectional {
            "bidirectional"
        } else {
            "forward"
        }
    }
}

/// An ONNX value in the recurrent layout, its batch not first (`X`, `Y`, `Y_h`, `Y_c`);
/// its `shape()` lists the other axes in order. Such values never leave this lowering.
struct Moved(Value);

/// `Transpose` of `x` by the full permutation `perm` (batch axis included); `shape` is the
/// result's non-batch axes.
fn transpose_full(
    g: &mut GraphBuilder,
    scope: &str,
    x: &Value,
    perm: &[i64],
    shape: Vec<u64>,
) -> Value {
    let attrs = vec![("perm", Attr::Ints(perm.to_vec()))];
    single(g.node(
        "Transpose",
        scope,
        vec![x.name().to_owned()],
        attrs,
        vec![shape],
    ))
}

/// ONNX's `Y` `(T, D, N, H)` as the time-major sequence `(T, N, D·H)` the next layer reads:
/// a Transpose and a Reshape to `[0, 0, D·H]` (0 copies the time and batch axes).
fn next_layer_input(g: &mut GraphBuilder, scope: &str, y: &Moved, [t, d, h]: [u64; 3]) -> Moved {
    let moved = transpose_full(g, scope, &y.0, &[0, 2, 1, 3], vec![t, d, h]);
    let shape = g.constant_i64(&format!("{scope}.shape"), &[0, 0, (d * h) as i64]);
    let inputs = vec![moved.name().to_owned(), shape.name().to_owned()];
    Moved(single(g.node(
        "Reshape",
        scope,
        inputs,
        vec![],
        vec![vec![t, d * h]],
    )))
}

impl<'p> Lowering<'p, '_> {
    /// `lstm.input(input, hx, params, has_biases, num_layers, dropout, train,
    /// bidirectional, batch_first)`.
    pub(super) fn lstm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        self.recurrent(node, args, scope, Cell::Lstm)
    }

    /// `gru.input(input, hx, params, has_biases, num_layers, dropout, train,
    /// bidirectional, batch_first)`.
    pub(super) fn gru(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        self.recurrent(node, args, scope, Cell::Gru)
    }

    /// `rnn_tanh.input(input, hx, params, has_biases, num_layers, dropout, train,
    /// bidirectional, batch_first)`, written as a GRU (see the module doc).
    pub(super) fn rnn_tanh(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        self.recurrent(node, args, scope, Cell::Tanh)
    }

    fn recurrent(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        cell: Cell,
    ) -> Result<(), OnnxError> {
        if args.bool("train").or_shape()? {
            return Err(arg_error(
                "the recurrent layer is in training mode (dropout between layers); export the model after `model.eval()`".into(),
            ));
        }
        let params = args.tensors("params").or_shape()?;
        let rnn = self.recurrence(args, cell, params)?;
        self.check_zero_state(args, cell)?;
        let batch_first = args.bool("batch_first").or_shape()?;
        let (x, rows) = self.sequence(args.tensor("input").or_shape()?, batch_first, scope)?;
        let &[seq, features] = x.shape() else {
            return Err(arg_error(format!(
                "it reads a (batch, sequence, features) input, got per-sample {:?}",
                x.shape()
            )));
        };
        // The final states the program reads; ONNX writes them up to the last one read.
        let read: Vec<bool> = (1..=cell.states())
            .map(|k| {
                self.output_name(node, k)
                    .map(|name| !self.readers_of(name).is_empty())
            })
            .collect::<Result<_, _>>()?;
        let states = read.iter().rposition(|&r| r).map_or(0, |k| k + 1);
        let (d, h) = (rnn.directions(), rnn.hidden);
        let mut input = Moved(transpose_full(
            &mut self.g,
            scope,
            &x,
            &[1, 0, 2],
            vec![seq, features],
        ));
        let mut input_size = features;
        let mut finals: Vec<Vec<Moved>> = (0..states).map(|_| Vec::new()).collect();
        for layer in 0..rnn.layers {
            let mut inputs = vec![input.0.name().to_owned()];
            inputs.extend(
                self.layer_weights(&rnn, params, layer, input_size, scope)?
                    .iter()
                    .map(|w| w.name().to_owned()),
            );
            let mut attrs = vec![
                ("direction", Attr::Str(rnn.direction())),
                ("hidden_size", Attr::Int(h as i64)),
            ];
            if cell.op() == "GRU" {
                attrs.push(("linear_before_reset", Attr::Int(1)));
            }
            let shapes = std::iter::once(vec![seq, d, h])
                .chain((0..states).map(|_| vec![d, h]))
                .collect();
            let mut outputs = self.g.node(cell.op(), scope, inputs, attrs, shapes);
            let layer_states = outputs.split_off(1);
            let y = Moved(single(outputs));
            for (state, value) in finals.iter_mut().zip(layer_states) {
                state.push(Moved(value));
            }
            input = if layer + 1 < rnn.layers {
                next_layer_input(&mut self.g, scope, &y, [seq, d, h])
            } else {
                y
            };
            input_size = d * h;
        }
        // `(T, D, N, H)` → `(N, T, D, H)` → `(N, T, D·H)`.
        let out = transpose_full(&mut self.g, scope, &input.0, &[2, 0, 1, 3], vec![seq, d, h]);
        let out = self.g.reshape(scope, &out, &[seq, d * h])?;
        let out = Tensor::from_rows(rows, out);
        let out = if batch_first {
            out
        } else {
            out.transposed(&mut self.g, scope, &[1, 0, 2])?
        };
        self.bind_tensor(node, 0, out)?;
        for (k, (per_layer, read)) in finals.into_iter().zip(read).enumerate() {
            if read {
                self.bind_state(node, k + 1, &per_layer, [d, h], rows, scope)?;
            } else {
                self.unproduced_output(node, k + 1);
            }
        }
        self.unproduced_from(node, states + 1);
        Ok(())
    }

    /// The call's configuration, after checking `params` against it: per layer and
    /// direction `weight_ih`, `weight_hh` (and `bias_ih`, `bias_hh`), all stored.
    fn recurrence(
        &self,
        args: &Args<'_>,
        cell: Cell,
        params: &[String],
    ) -> Result<Recurrence, OnnxError> {
        let layers = args.int("num_layers").or_shape()?;
        let layers = usize::try_from(layers)
            .ok()
            .filter(|&l| l > 0)
            .ok_or_else(|| arg_error(format!("num_layers {layers}")))?;
        let bidirectional = args.bool("bidirectional").or_shape()?;
        let biased = args.bool("has_biases").or_shape()?;
        let directions = if bidirectional { 2 } else { 1 };
        let per_layer = directions * tensors_per_direction(biased);
        if params.len() != layers * per_layer {
            let projected = cell == Cell::Lstm && params.len() == layers * (per_layer + directions);
            return Err(arg_error(if projected {
                "an LSTM with proj_size is not exported".to_owned()
            } else {
                format!(
                    "it has {} weights, expected {} for {layers} layer(s) of {directions} direction(s){}",
                    params.len(),
                    layers * per_layer,
                    if biased { " with biases" } else { "" }
                )
            }));
        }
        let weight_hh = self.constant(&params[1])?;
        let &[rows, hidden] = self.constant_dims(&weight_hh)?.as_slice() else {
            return Err(arg_error(format!("`{weight_hh}` is not a 2-D weight")));
        };
        if hidden == 0 || rows != cell.torch_gates() * hidden {
            return Err(arg_error(format!(
                "`{weight_hh}` has sizes [{rows}, {hidden}], not the {} gates of a {} times its hidden size",
                cell.torch_gates(),
                cell.torch_name()
            )));
        }
        Ok(Recurrence {
            cell,
            layers,
            bidirectional,
            biased,
            hidden,
        })
    }

    /// Checks that the initial state is zero (ONNX's default, so it is left out): the
    /// zeros torch makes for a layer called without a state, or an all-zero constant.
    fn check_zero_state(&mut self, args: &Args<'_>, cell: Cell) -> Result<(), OnnxError> {
        let states: Vec<&str> = match cell {
            Cell::Lstm => args
                .tensors("hx")
                .or_shape()?
                .iter()
                .map(String::as_str)
                .collect(),
            Cell::Gru | Cell::Tanh => vec![args.tensor("hx").or_shape()?],
        };
        if states.len() != cell.states() {
            return Err(arg_error(format!(
                "it is given {} initial state tensors, an {} takes {}",
                states.len(),
                cell.torch_name(),
                cell.states()
            )));
        }
        for state in states {
            let zero =
                self.is_constant(state) && self.constant_values(state)?.1.iter().all(|&v| v == 0.0);
            if !zero {
                return Err(arg_error(format!(
                    "its initial state `{state}` is not zero; only the zero initial state (the layer called without one, or zeros) is exported"
                )));
            }
        }
        Ok(())
    }

    /// The input sequence as a batch-first `(N, T, C)` value and how many times the batch
    /// its rows are (Sequencer's rows and columns run as sequences: `k·N` rows): `input`
    /// itself when `batch_first`, else `input` is `(T, N, C)` with its batch moved (a
    /// permute of a batch-first tensor) and is read back batch-first.
    fn sequence(
        &mut self,
        input: &str,
        batch_first: bool,
        scope: &str,
    ) -> Result<(Value, Rows), OnnxError> {
        let t = self.tensor(input)?;
        if t.rank() != 3 {
            return Err(arg_error(format!(
                "its input has {} dimensions; only a batched sequence (3 dimensions) is exported",
                t.rank()
            )));
        }
        let t = if batch_first {
            t
        } else {
            t.transposed(&mut self.g, scope, &[1, 0, 2])?
        };
        let Some((rows, value)) = t.as_rows() else {
            return Err(arg_error(if batch_first {
                "batch_first=True reads dimension 0 as the batch, but the input's batch is elsewhere".into()
            } else {
                "batch_first=False reads dimension 1 as the batch, but the input's batch is elsewhere; feed it `x.permute(1, 0, 2)` of a batch-first tensor, or use batch_first=True".into()
            }));
        };
        Ok((value, rows))
    }

    /// Layer `layer`'s `W`, `R` and (with biases) `B` initializers, re-laid from torch's
    /// weights for an input of `input_size` features.
    fn layer_weights(
        &mut self,
        rnn: &Recurrence,
        params: &[String],
        layer: usize,
        input_size: u64,
        scope: &str,
    ) -> Result<Vec<Weight>, OnnxError> {
        let (torch_rows, rows) = (rnn.torch_rows(), rnn.onnx_rows());
        let (mut w, mut r, mut b) = (Vec::new(), Vec::new(), Vec::new());
        let directions = rnn.directions() as usize;
        // A tanh RNN's held gates need their biases even where torch has none.
        let biased = rnn.biased || rnn.cell == Cell::Tanh;
        for direction in 0..directions {
            let first = (layer * directions + direction) * rnn.per_direction();
            let names = &params[first..first + rnn.per_direction()];
            let cell = rnn.cell;
            w.extend(self.gates_of(&names[0], &[torch_rows, input_size], cell, Part::Weight)?);
            r.extend(self.gates_of(&names[1], &[torch_rows, rnn.hidden], cell, Part::Weight)?);
            match names.get(2..4) {
                Some([input, recurrent]) => {
                    b.extend(self.gates_of(input, &[torch_rows], cell, Part::InputBias)?);
                    b.extend(self.gates_of(recurrent, &[torch_rows], cell, Part::RecurrentBias)?);
                }
                _ if biased => {
                    let zeros = vec![0.0; torch_rows as usize];
                    for part in [Part::InputBias, Part::RecurrentBias] {
                        b.extend(onnx_gates(&zeros, cell, part).unwrap_or_default());
                    }
                }
                _ => {}
            }
        }
        let d = rnn.directions();
        let mut weights = vec![
            self.g.folded(
                &format!("{scope}.l{layer}.W"),
                vec![d, rows, input_size],
                &w,
            )?,
            self.g.folded(
                &format!("{scope}.l{layer}.R"),
                vec![d, rows, rnn.hidden],
                &r,
            )?,
        ];
        if biased {
            weights.push(
                self.g
                    .folded(&format!("{scope}.l{layer}.B"), vec![d, 2 * rows], &b)?,
            );
        }
        Ok(weights)
    }

    /// Stored tensor `name`, which must have sizes `dims`, with its gate blocks in ONNX's
    /// order.
    fn gates_of(
        &mut self,
        name: &str,
        dims: &[u64],
        cell: Cell,
        part: Part,
    ) -> Result<Vec<f32>, OnnxError> {
        let fqn = self.constant(name)?;
        let got = self.constant_dims(&fqn)?;
        if got != dims {
            return Err(arg_error(format!(
                "`{fqn}` has sizes {got:?}, expected {dims:?}"
            )));
        }
        let values = self.read(&fqn)?;
        onnx_gates(&values, cell, part).ok_or_else(|| {
            arg_error(format!(
                "`{fqn}` does not split into {} gates",
                cell.torch_gates()
            ))
        })
    }

    /// Binds output `k`, a final state `(layers·D, N, H)`, from each layer's `(D, N, H)`:
    /// each moved batch-first and concatenated, then transposed to put the batch second.
    fn bind_state(
        &mut self,
        node: &Node,
        k: usize,
        per_layer: &[Moved],
        [d, h]: [u64; 2],
        rows: Rows,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let firsts: Vec<Value> = per_layer
            .iter()
            .map(|s| transpose_full(&mut self.g, scope, &s.0, &[1, 0, 2], vec![d, h]))
            .collect();
        let all = match firsts.as_slice() {
            [one] => one.clone(),
            several => {
                let refs: Vec<&Value> = several.iter().collect();
                self.g.concat(scope, &refs, 0)?
            }
        };
        let all = Tensor::from_rows(rows, all).transposed(&mut self.g, scope, &[1, 0, 2])?;
        self.bind_tensor(node, k, all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_move_to_onnx_order() {
        // torch LSTM i, f, g, o → ONNX i, o, f, c.
        let lstm = onnx_gates(
            &[1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5],
            Cell::Lstm,
            Part::Weight,
        );
        assert_eq!(lstm, Some(vec![1.0, 1.5, 4.0, 4.5, 2.0, 2.5, 3.0, 3.5]));
        // torch GRU r, z, n → ONNX z, r, h.
        assert_eq!(
            onnx_gates(&[1.0, 2.0, 3.0], Cell::Gru, Part::InputBias),
            Some(vec![2.0, 1.0, 3.0])
        );
        assert_eq!(onnx_gates(&[1.0, 2.0], Cell::Gru, Part::Weight), None);
        assert_eq!(onnx_gates(&[], Cell::Lstm, Part::Weight), None);
    }

    #[test]
    fn a_tanh_rnn_is_a_gru_with_its_update_gate_shut_and_its_reset_gate_open() {
        let held = GATE_HELD;
        assert_eq!(
            onnx_gates(&[1.0, 2.0], Cell::Tanh, Part::Weight),
            Some(vec![0.0, 0.0, 0.0, 0.0, 1.0, 2.0])
        );
        assert_eq!(
            onnx_gates(&[1.0, 2.0], Cell::Tanh, Part::InputBias),
            Some(vec![-held, -held, held, held, 1.0, 2.0])
        );
        assert_eq!(
            onnx_gates(&[1.0, 2.0], Cell::Tanh, Part::RecurrentBias),
            Some(vec![0.0, 0.0, 0.0, 0.0, 1.0, 2.0])
        );
        // The held gates saturate the logistic in float32: z = 0 and r = 1 exactly.
        let logistic = |x: f32| 1.0 / (1.0 + (-x).exp());
        assert_eq!(logistic(-held), 0.0);
        assert_eq!(logistic(held), 1.0);
    }
}
