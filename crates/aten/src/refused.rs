//! Why an aten op with no lowering is refused: the classes of op that opset 11 or ATC
//! cannot express, each op's class derived from torch's own data (its tags, and the
//! `torch.fft`/`torch.linalg`/`torch.special` namespace it belongs to) by
//! `scripts/aten-refusals`, which prints [`CLASSES`]; the interop tier checks the table
//! against torch 2.13. A few ops are refused one by one for a reason of their own
//! ([`ONE_BY_ONE`]), which comes before their class's where torch's tag is not why (nn.RNN's
//! ReLU kernel is tagged `nondeterministic_seeded` for the dropout between its layers, off
//! in eval mode). An op in no class, with no lowering, is refused for lacking one.
//! The op document (`docs/onnx-ops.md`) lists the classes and their ops.

/// A class of ops the export cannot write, for a reason in opset 11 or ATC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// torch tags it `nondeterministic_seeded`: it draws from torch's random generator.
    Random,
    /// torch tags it `dynamic_output_shape`: its result's size depends on the values.
    ValueShaped,
    /// A `torch.fft` function.
    Fourier,
    /// A `torch.linalg` function (or one torch documents as its alias).
    Linalg,
    /// A `torch.special` function (or one torch documents as its alias).
    Special,
}

impl Class {
    /// Every class, in the order the document lists them.
    #[cfg(any(test, feature = "testing"))]
    pub const ALL: [Class; 5] = [
        Class::Random,
        Class::ValueShaped,
        Class::Fourier,
        Class::Linalg,
        Class::Special,
    ];

    /// How torch marks the class.
    pub fn marked(self) -> &'static str {
        match self {
            Class::Random => "tagged `nondeterministic_seeded`",
            Class::ValueShaped => "tagged `dynamic_output_shape`",
            Class::Fourier => "in `torch.fft`",
            Class::Linalg => "in `torch.linalg`",
            Class::Special => "in `torch.special`",
        }
    }

    /// The opset-11 or ATC reason the class is refused for.
    pub fn reason(self) -> &'static str {
        match self {
            Class::Random => {
                "it draws random numbers from torch's generator, which no ONNX graph reproduces, so its values could never match torch's"
            }
            Class::ValueShaped => {
                "the size of its result depends on the input's values, and ATC compiles static shapes only (opset 11 computes such shapes with NonZero, which ATC rejects)"
            }
            Class::Fourier => {
                "opset 11 has no Fourier transform (DFT and STFT arrived in opset 17) and no complex element type for its spectra"
            }
            Class::Linalg => {
                "of `torch.linalg`, eigenvectors and singular vectors are refused for good: LAPACK chooses each vector's sign (and the basis of a repeated eigenvalue's space) by its own rounding, which no other algorithm reproduces; ckpt lowers the norms and, unrolled over matrices of at most 8×8, determinants, inverses, Cholesky, LU and QR factors, powers, Vandermonde matrices, symmetric eigenvalues and singular values (and the rank, pseudo-inverse and condition number torch derives from them); opset 11 has no operator for the other factorisations and solves (ATC's operator list leaves out its one, Det), and ckpt does not unroll them"
            }
            Class::Special => {
                "ckpt lowers no `torch.special` function under that name, and opset 11 has no operator for special functions but Erf"
            }
        }
    }
}

/// Why batch norm with the batch's statistics is refused (training mode, or no running
/// statistics): the lowering's refusal of `batch_norm` and `_batch_norm_with_update`'s.
pub const BATCH_STATISTICS: &str = "BatchNorm normalises with the batch's statistics (training mode, or track_running_stats=False), which mixes samples; export the model after `model.eval()`, with running statistics";

/// Why an LU solve by factors computed at run time is refused (`lu_solve`, and
/// `lu_unpack`'s permutation from pivots an activation holds): the lowering multiplies by
/// the solve's matrix computed at export (triangular and Cholesky solves by a run-time
/// matrix are unrolled over its entries instead, as the inverse is).
pub const SOLVE_BY_ACTIVATION: &str = "opset 11 and ATC have no LU solve, matrix inverse or permutation by pivots, so ckpt solves by LU factors only when they and their pivots are known at export (constants of the program, whose inverse it computes and multiplies by); here they are computed at run time";

/// Ops refused one by one, each for its own reason in opset 11 or in torch's definition of
/// its result (not a class torch marks), sorted by name: aten op name (another namespace's
/// op as `namespace.name`), reason.
pub const ONE_BY_ONE: &[(&str, &str)] = &[
    ("_batch_norm_with_update", BATCH_STATISTICS),
    (
        "_embedding_bag",
        "its indices are every sample's bags flattened into one list and cut by offsets that count across the batch (`F.embedding_bag` of a 2-D input flattens it), so no axis keeps the samples apart, as ATC's dynamic batch needs; an `nn.Embedding` reduced over its bag axis converts",
    ),
    (
        "_fft_c2r",
        "it transforms a complex spectrum, and opset 11 has no complex element type (ckpt writes `irfft` and `hfft` of real inputs as cosine and sine matrices instead)",
    ),
    (
        "_fft_r2c",
        "its result is a complex spectrum, and opset 11 has no complex element type and no Fourier transform (DFT arrived in opset 17)",
    ),
    (
        "as_strided",
        "it reads the tensor's storage through strides and an offset, a memory layout an ONNX tensor does not have (a graph holds values, not where torch keeps them); the views that mean the same (`view`, `permute`, `unfold`, slices) are lowered",
    ),
    (
        "as_strided_copy",
        "it reads the tensor's storage through strides and an offset, a memory layout an ONNX tensor does not have (a graph holds values, not where torch keeps them); the views that mean the same (`view`, `permute`, `unfold`, slices) are lowered",
    ),
    (
        "as_strided_scatter",
        "it writes into the tensor's storage through strides and an offset, a memory layout an ONNX tensor does not have (a graph holds values, not where torch keeps them); the scatters into views that mean the same (`slice_scatter`, `select_scatter`, `diagonal_scatter`) are lowered",
    ),
    (
        "combinations",
        "torch.export records the number of its rows as a data-dependent size (torch selects them with `masked_select`, even for r = 1), and ATC compiles static shapes only",
    ),
    (
        "complex",
        "its result is a complex tensor, and opset 11 has no complex element type",
    ),
    (
        "embedding_dense_backward",
        "its result, the gradient of the embedding table, adds up the output gradients of every index of every sample into one table, which mixes samples; only ops that treat each sample alike are exported",
    ),
    (
        "float_power",
        "it computes in float64 whatever its operands (torch promotes both to double), and an exported graph computes in float32, which would not hold float64's precision; `pow` keeps float32",
    ),
    (
        "hash_tensor",
        "it reduces the bit patterns of the entries (an XOR of their 64-bit views), and no opset-11 operator reads the bits of a float",
    ),
    (
        "mode",
        "torch's CPU kernel sorts each row with `std::sort` (unstable, and undefined on NaN) and returns the index of the entry that sort leaves last among those equal to the mode, so which of the equal entries it names is not defined by the values; a graph ranks equal entries one fixed way and would differ from torch",
    ),
    (
        "nextafter",
        "it steps to the neighbouring representable float, which is found from the bits of the float (its exponent, and subnormals near zero), and no opset-11 operator reads the bits of a float",
    ),
    (
        "nonzero_numpy",
        "the number of nonzero entries, the size of its results, depends on the input's values, and ATC compiles static shapes only (opset 11 finds them with NonZero, which ATC rejects)",
    ),
    (
        "polar",
        "its result is a complex tensor, and opset 11 has no complex element type",
    ),
    (
        "resize_",
        "it resizes the tensor's storage in place, and where the size grows the new entries are uninitialised memory, which no graph reproduces",
    ),
    (
        "resize_as_",
        "it resizes the tensor's storage in place to another tensor's sizes: where the size grows the new entries are uninitialised memory, and otherwise the entries are the storage read in the new sizes, a memory layout an ONNX tensor does not have; `reshape_as` and `view_as` are lowered",
    ),
    (
        "signbit",
        "it reads the sign bit of NaN too (a NaN torch computes is often negative), and no opset-11 operator reads the bits of a float: every comparison with a NaN is false",
    ),
    (
        "stft",
        "it returns complex spectra (or torch refuses a real one without `return_complex=False`, deprecated), and opset 11 has no complex element type and no Fourier transform (STFT arrived in opset 17)",
    ),
    (
        "svd",
        "LAPACK chooses the sign of each singular vector pair (and a basis where singular values repeat), which no other algorithm reproduces, so the vectors could never match torch's; `torch.linalg.svdvals` gives the values alone",
    ),
    (
        "sym_is_contiguous",
        "it reads whether the tensor is laid out contiguously in torch's storage, a memory layout an ONNX tensor does not have",
    ),
    (
        "sym_storage_offset",
        "it reads where the tensor starts in torch's storage, a memory layout an ONNX tensor does not have",
    ),
    (
        "sym_stride",
        "it reads the tensor's strides in torch's storage, a memory layout an ONNX tensor does not have",
    ),
    (
        "torch_nn._linear_cross_entropy_batch_chunked",
        "it is `F.linear_cross_entropy`'s chunked kernel, a custom op of torch's own (not aten) that computes the loss and its gradients chunk by chunk in Python, which torch.export keeps whole with no decomposition; call `F.linear_cross_entropy` without `options` (torch then records a matrix product and `cross_entropy_loss`, which convert)",
    ),
    (
        "torch_nn._linear_cross_entropy_batch_chunked_no_reduction",
        "it is `F.linear_cross_entropy`'s chunked kernel, a custom op of torch's own (not aten) that computes the loss and its gradients chunk by chunk in Python, which torch.export keeps whole with no decomposition; call `F.linear_cross_entropy` without `options` (torch then records a matrix product and `cross_entropy_loss`, which convert)",
    ),
    (
        "view_as_complex",
        "its result is a complex tensor, and opset 11 has no complex element type",
    ),
];

/// The reason aten op `name` is refused one by one ([`ONE_BY_ONE`]), if it is.
pub fn one_by_one(name: &str) -> Option<&'static str> {
    ONE_BY_ONE
        .binary_search_by(|(n, _)| (*n).cmp(name))
        .ok()
        .map(|i| ONE_BY_ONE[i].1)
}

/// The class of aten op `name` (`polygamma`, without an overload), if it has one.
pub fn class(name: &str) -> Option<Class> {
    CLASSES
        .binary_search_by(|(n, _)| (*n).cmp(name))
        .ok()
        .map(|i| CLASSES[i].1)
}

/// Every classified aten op, sorted by name; printed by `scripts/aten-refusals`.
pub const CLASSES: &[(&str, Class)] = &[
    ("_ctc_loss", Class::ValueShaped),
    ("_cudnn_attention_backward", Class::Random),
    ("_cudnn_attention_forward", Class::Random),
    ("_cudnn_init_dropout_state", Class::Random),
    ("_cudnn_rnn", Class::Random),
    ("_efficient_attention_forward", Class::Random),
    ("_fill_mem_eff_dropout_mask_", Class::Random),
    ("_flash_attention_forward", Class::Random),
    ("_flash_attention_forward_no_dropout_inplace", Class::Random),
    ("_fused_dropout", Class::Random),
    ("_fused_sdp_choice", Class::Random),
    ("_lstm_mps", Class::Random),
    ("_nested_tensor_softmax_with_shape", Class::Random),
    ("_sample_dirichlet", Class::Random),
    ("_scaled_dot_product_attention_math", Class::Random),
    ("_scaled_dot_product_attention_math_for_mps", Class::Random),
    ("_scaled_dot_product_cudnn_attention", Class::Random),
    (
        "_scaled_dot_product_cudnn_attention_backward",
        Class::Random,
    ),
    ("_scaled_dot_product_efficient_attention", Class::Random),
    (
        "_scaled_dot_product_efficient_attention_backward",
        Class::Random,
    ),
    ("_scaled_dot_product_flash_attention", Class::Random),
    ("_scaled_dot_product_flash_attention_for_cpu", Class::Random),
    (
        "_scaled_dot_product_fused_attention_overrideable",
        Class::Random,
    ),
    ("_standard_gamma", Class::Random),
    ("_triton_scaled_dot_attention", Class::Random),
    ("_unique", Class::ValueShaped),
    ("_unique2", Class::ValueShaped),
    ("alpha_dropout", Class::Random),
    ("alpha_dropout_", Class::Random),
    ("argwhere", Class::ValueShaped),
    ("bernoulli", Class::Random),
    ("bernoulli_", Class::Random),
    ("bincount", Class::ValueShaped),
    ("binomial", Class::Random),
    ("cauchy", Class::Random),
    ("cauchy_", Class::Random),
    ("det", Class::Linalg),
    ("digamma", Class::Special),
    ("dropout", Class::Random),
    ("dropout_", Class::Random),
    ("erf", Class::Special),
    ("erfc", Class::Special),
    ("erfinv", Class::Special),
    ("exp2", Class::Special),
    ("expm1", Class::Special),
    ("exponential", Class::Random),
    ("exponential_", Class::Random),
    ("feature_alpha_dropout", Class::Random),
    ("feature_alpha_dropout_", Class::Random),
    ("feature_dropout", Class::Random),
    ("feature_dropout_", Class::Random),
    ("fft_fft", Class::Fourier),
    ("fft_fft2", Class::Fourier),
    ("fft_fftfreq", Class::Fourier),
    ("fft_fftn", Class::Fourier),
    ("fft_fftshift", Class::Fourier),
    ("fft_hfft", Class::Fourier),
    ("fft_hfft2", Class::Fourier),
    ("fft_hfftn", Class::Fourier),
    ("fft_ifft", Class::Fourier),
    ("fft_ifft2", Class::Fourier),
    ("fft_ifftn", Class::Fourier),
    ("fft_ifftshift", Class::Fourier),
    ("fft_ihfft", Class::Fourier),
    ("fft_ihfft2", Class::Fourier),
    ("fft_ihfftn", Class::Fourier),
    ("fft_irfft", Class::Fourier),
    ("fft_irfft2", Class::Fourier),
    ("fft_irfftn", Class::Fourier),
    ("fft_rfft", Class::Fourier),
    ("fft_rfft2", Class::Fourier),
    ("fft_rfftfreq", Class::Fourier),
    ("fft_rfftn", Class::Fourier),
    ("geometric", Class::Random),
    ("geometric_", Class::Random),
    ("gru", Class::Random),
    ("i0", Class::Special),
    ("igamma", Class::Special),
    ("igammac", Class::Special),
    ("index", Class::ValueShaped),
    ("inverse", Class::Linalg),
    ("linalg__powsum", Class::Linalg),
    ("linalg_cholesky", Class::Linalg),
    ("linalg_cholesky_ex", Class::Linalg),
    ("linalg_cond", Class::Linalg),
    ("linalg_cross", Class::Linalg),
    ("linalg_det", Class::Linalg),
    ("linalg_diagonal", Class::Linalg),
    ("linalg_eig", Class::Linalg),
    ("linalg_eigh", Class::Linalg),
    ("linalg_eigvals", Class::Linalg),
    ("linalg_eigvalsh", Class::Linalg),
    ("linalg_householder_product", Class::Linalg),
    ("linalg_inv", Class::Linalg),
    ("linalg_inv_ex", Class::Linalg),
    ("linalg_ldl_factor", Class::Linalg),
    ("linalg_ldl_factor_ex", Class::Linalg),
    ("linalg_ldl_solve", Class::Linalg),
    ("linalg_lstsq", Class::ValueShaped),
    ("linalg_lu", Class::Linalg),
    ("linalg_lu_factor", Class::Linalg),
    ("linalg_lu_factor_ex", Class::Linalg),
    ("linalg_lu_solve", Class::Linalg),
    ("linalg_matmul", Class::Linalg),
    ("linalg_matrix_exp", Class::Linalg),
    ("linalg_matrix_norm", Class::Linalg),
    ("linalg_matrix_power", Class::Linalg),
    ("linalg_matrix_rank", Class::Linalg),
    ("linalg_multi_dot", Class::Linalg),
    ("linalg_norm", Class::Linalg),
    ("linalg_pinv", Class::Linalg),
    ("linalg_qr", Class::Linalg),
    ("linalg_slogdet", Class::Linalg),
    ("linalg_solve", Class::Linalg),
    ("linalg_solve_ex", Class::Linalg),
    ("linalg_solve_triangular", Class::Linalg),
    ("linalg_svd", Class::Linalg),
    ("linalg_svdvals", Class::Linalg),
    ("linalg_tensorinv", Class::Linalg),
    ("linalg_tensorsolve", Class::Linalg),
    ("linalg_vander", Class::Linalg),
    ("linalg_vecdot", Class::Linalg),
    ("linalg_vector_norm", Class::Linalg),
    ("log_normal", Class::Random),
    ("log_normal_", Class::Random),
    ("logit", Class::Special),
    ("lstm", Class::Random),
    ("masked_select", Class::ValueShaped),
    ("matrix_exp", Class::Linalg),
    ("matrix_power", Class::Linalg),
    ("miopen_rnn", Class::Random),
    ("multinomial", Class::Random),
    ("mvlgamma", Class::Special),
    ("native_dropout", Class::Random),
    ("nonzero", Class::ValueShaped),
    ("normal", Class::Random),
    ("normal_", Class::Random),
    ("normal_functional", Class::Random),
    ("one_hot", Class::ValueShaped),
    ("orgqr", Class::Linalg),
    ("pinverse", Class::Linalg),
    ("poisson", Class::Random),
    ("polygamma", Class::Special),
    ("rand", Class::Random),
    ("rand_like", Class::Random),
    ("randint", Class::Random),
    ("randint_like", Class::Random),
    ("randn", Class::Random),
    ("randn_like", Class::Random),
    ("random", Class::Random),
    ("random_", Class::Random),
    ("randperm", Class::Random),
    ("repeat_interleave", Class::ValueShaped),
    ("rnn_relu", Class::Random),
    ("rnn_tanh", Class::Random),
    ("rrelu", Class::Random),
    ("rrelu_", Class::Random),
    ("rrelu_with_noise", Class::Random),
    ("rrelu_with_noise_", Class::Random),
    ("rrelu_with_noise_functional", Class::Random),
    ("scaled_dot_product_attention", Class::Random),
    ("sigmoid", Class::Special),
    ("sinc", Class::Special),
    ("slogdet", Class::Linalg),
    ("special_airy_ai", Class::Special),
    ("special_bessel_j0", Class::Special),
    ("special_bessel_j1", Class::Special),
    ("special_bessel_y0", Class::Special),
    ("special_bessel_y1", Class::Special),
    ("special_chebyshev_polynomial_t", Class::Special),
    ("special_chebyshev_polynomial_u", Class::Special),
    ("special_chebyshev_polynomial_v", Class::Special),
    ("special_chebyshev_polynomial_w", Class::Special),
    ("special_digamma", Class::Special),
    ("special_entr", Class::Special),
    ("special_erf", Class::Special),
    ("special_erfc", Class::Special),
    ("special_erfcx", Class::Special),
    ("special_erfinv", Class::Special),
    ("special_exp2", Class::Special),
    ("special_expit", Class::Special),
    ("special_expm1", Class::Special),
    ("special_gammainc", Class::Special),
    ("special_gammaincc", Class::Special),
    ("special_gammaln", Class::Special),
    ("special_hermite_polynomial_h", Class::Special),
    ("special_hermite_polynomial_he", Class::Special),
    ("special_i0", Class::Special),
    ("special_i0e", Class::Special),
    ("special_i1", Class::Special),
    ("special_i1e", Class::Special),
    ("special_laguerre_polynomial_l", Class::Special),
    ("special_legendre_polynomial_p", Class::Special),
    ("special_log1p", Class::Special),
    ("special_log_ndtr", Class::Special),
    ("special_log_softmax", Class::Special),
    ("special_logit", Class::Special),
    ("special_logsumexp", Class::Special),
    ("special_modified_bessel_i0", Class::Special),
    ("special_modified_bessel_i1", Class::Special),
    ("special_modified_bessel_k0", Class::Special),
    ("special_modified_bessel_k1", Class::Special),
    ("special_multigammaln", Class::Special),
    ("special_ndtr", Class::Special),
    ("special_ndtri", Class::Special),
    ("special_polygamma", Class::Special),
    ("special_psi", Class::Special),
    ("special_round", Class::Special),
    ("special_scaled_modified_bessel_k0", Class::Special),
    ("special_scaled_modified_bessel_k1", Class::Special),
    ("special_shifted_chebyshev_polynomial_t", Class::Special),
    ("special_shifted_chebyshev_polynomial_u", Class::Special),
    ("special_shifted_chebyshev_polynomial_v", Class::Special),
    ("special_shifted_chebyshev_polynomial_w", Class::Special),
    ("special_sinc", Class::Special),
    ("special_softmax", Class::Special),
    ("special_spherical_bessel_j0", Class::Special),
    ("special_xlog1py", Class::Special),
    ("special_xlogy", Class::Special),
    ("special_zeta", Class::Special),
    ("uniform", Class::Random),
    ("uniform_", Class::Random),
    ("unique_consecutive", Class::ValueShaped),
    ("unique_dim", Class::ValueShaped),
    ("unique_dim_consecutive", Class::ValueShaped),
    ("xlogy", Class::Special),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_so_lookups_find_every_row() {
        assert!(CLASSES.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(class("polygamma"), Some(Class::Special));
        assert_eq!(class("randn_like"), Some(Class::Random));
        assert_eq!(class("fft_rfft"), Some(Class::Fourier));
        assert_eq!(class("conv2d"), None);
    }

    #[test]
    fn ops_refused_one_by_one_are_sorted_and_say_more_than_their_class() {
        assert!(ONE_BY_ONE.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(one_by_one("mode").is_some_and(|r| r.contains("std::sort")));
        assert_eq!(one_by_one("sort"), None);
        // An op in a class is listed one by one only to say why its tag is not the reason.
        for (name, reason) in ONE_BY_ONE {
            if let Some(c) = class(name) {
                assert!(
                    reason.contains(c.marked()),
                    "{name}: say why {} does not apply",
                    c.marked()
                );
            }
        }
    }

    #[test]
    fn every_class_has_ops() {
        for c in Class::ALL {
            assert!(CLASSES.iter().any(|(_, k)| *k == c), "{c:?} has no ops");
        }
    }
}
