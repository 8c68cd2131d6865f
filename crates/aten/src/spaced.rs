//! `linspace`/`logspace` as torch's CPU kernel places the points (`linspace_kernel`,
//! `logspace_kernel` in `RangeFactoriesKernel.cpp`), one rule for the evaluator and the
//! lowering: with `step = (end − start) / (steps − 1)`, entry `i` of the first half
//! (`i < steps / 2`) is `start + step·i` and every later entry `end − step·(steps − 1 − i)`,
//! so both ends are exact; one step is `start` alone. `logspace` raises `base` to them.
//! torch's x86-64 and aarch64 builds compile `start + step·i` (and `end − step·k`) to a
//! fused multiply-add, which rounds once: the evaluator does too (`f32::mul_add`).

/// Whether entry `i` of `steps` points is counted from the start (else back from the end).
pub fn from_start(i: u64, steps: u64) -> bool {
    i < steps / 2
}

/// The multiple of `step` entry `i` of `steps` points is away from its end.
pub fn offset(i: u64, steps: u64) -> u64 {
    if from_start(i, steps) {
        i
    } else {
        steps - 1 - i
    }
}

/// `linspace(start, end, steps)` in float32.
pub fn linspace(start: f32, end: f32, steps: u64) -> Vec<f32> {
    if steps == 1 {
        return vec![start];
    }
    let step = (end - start) / (steps - 1) as f32;
    (0..steps)
        .map(|i| {
            let k = offset(i, steps) as f32;
            if from_start(i, steps) {
                step.mul_add(k, start)
            } else {
                (-step).mul_add(k, end)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ends_are_exact_and_the_halves_count_from_their_own_end() {
        let points = linspace(0.1, 0.7, 4);
        assert_eq!(points[0], 0.1);
        assert_eq!(points[3], 0.7);
        assert_eq!((offset(1, 4), offset(2, 4)), (1, 1));
        assert_eq!(linspace(3.0, -1.0, 1), [3.0]);
        assert_eq!(linspace(-1.0, 1.0, 5), [-1.0, -0.5, 0.0, 0.5, 1.0]);
    }
}
