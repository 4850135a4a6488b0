"""A compiled kernel for the ce model-change screening (optional: numba, ``fast`` extra).

The float32 screening of many candidates (:mod:`skmcal.acquisition`) computes,
per candidate, the class probabilities, the small solve of
:meth:`skmcal.softmax.SoftmaxPosterior._solves` and the model-change value
from the packed forms ``G_k`` and ``D_k' D_k``. In numpy each of these is a
few dozen passes over arrays of ``CE_CHUNK`` candidates; here they run fused,
over blocks of :data:`LANES` candidates whose intermediates stay in the
first-level cache, the innermost loops over the block (so that they compile to
vector instructions), in double precision. The values are approximate (their
inputs, the forms, are single precision); exact values keep the numpy path.
Without numba, :func:`model_change_kernel` is None and the numpy path scores.
"""

from __future__ import annotations

import functools

import numpy as np

#: Candidates handled together by the kernel (the innermost loop).
LANES = 128


@functools.lru_cache(maxsize=1)
def model_change_kernel():
    """The compiled kernel, or None where numba is not installed.

    ``kernel(forms, latent, basis, gamma, out)``: ``forms`` is ``(2 T, K)``
    (the upper triangles, ``np.triu_indices(d)`` order, of ``G_k`` then of
    ``D_k' D_k``, ``T = d (d + 1) / 2``), ``latent`` ``(n_c, K)``, ``basis``
    the zero-sum basis ``E`` (``(n_c, d)``); writes the model-change values
    ``||D_k R_k||`` into ``out`` (``(K,)``).
    """
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(nogil=True, cache=False, error_model="numpy")
    def kernel(forms, latent, basis, gamma, out):  # pragma: no cover - compiled
        n_c, d = basis.shape
        # a lane count the compiler does not know: loops of a constant count are
        # unrolled into scalar code instead of vectorised
        L = min(LANES, max(out.shape[0], 1))
        f32 = np.float32
        pi = np.empty(dtype=f32, shape=(n_c, L))
        s = np.empty(dtype=f32, shape=(n_c, L))
        mean = np.empty(dtype=f32, shape=(d, L))
        r = np.empty(dtype=f32, shape=(d, L))
        F = np.empty(dtype=f32, shape=(d, n_c, L))
        G = np.empty(dtype=f32, shape=(d, d, L))
        GF = np.empty(dtype=f32, shape=(d, n_c, L))
        N = np.empty(dtype=f32, shape=(n_c, n_c, L))
        z = np.empty(dtype=f32, shape=(n_c, L))
        step = np.empty(dtype=f32, shape=(d, L))
        top = np.empty(L)
        label = np.empty(L, dtype=np.int64)
        total = np.empty(L, dtype=f32)
        acc = np.empty(L, dtype=f32)
        T = d * (d + 1) // 2
        scale = 1.0 / gamma
        inverse = f32(scale)
        block = np.zeros((2 * T, L), dtype=forms.dtype)
        u = np.zeros((n_c, L))
        n = forms.shape[1]
        for start in range(0, n, L):
            width = min(L, n - start)
            block[:, :width] = forms[:, start : start + width]
            u[:, :width] = latent[:, start : start + width]
            # class probabilities pi = softmax(u / gamma); the pseudo-label: the first argmax
            for l in range(L):
                top[l] = u[0, l]
                label[l] = 0
            for c in range(1, n_c):
                for l in range(L):
                    if u[c, l] > top[l]:
                        top[l] = u[c, l]
                        label[l] = c
            total[:] = 0.0
            for c in range(n_c):
                for l in range(L):
                    pi[c, l] = np.exp(f32((u[c, l] - top[l]) * scale))
                    total[l] += pi[c, l]
            for c in range(n_c):
                for l in range(L):
                    pi[c, l] /= total[l]
                    s[c, l] = np.sqrt(pi[c, l])
            # E' pi, E' F = E' diag(s) - (E' pi) s', the residual E' (pi - yhat)
            for a in range(d):
                for l in range(L):
                    acc[l] = 0.0
                for c in range(n_c):
                    for l in range(L):
                        acc[l] += basis[c, a] * pi[c, l]
                for l in range(L):
                    mean[a, l] = acc[l]
                    r[a, l] = acc[l] - basis[label[l], a]
                for h in range(n_c):
                    for l in range(L):
                        F[a, h, l] = s[h, l] * (basis[h, a] - mean[a, l])
            # G_k from its packed upper triangle
            row = 0
            for a in range(d):
                for b in range(a, d):
                    for l in range(L):
                        G[a, b, l] = block[row, l]
                        G[b, a, l] = block[row, l]
                    row += 1
            # N = I + F' G F (Woodbury: eigenvalues >= 1), rhs = (G F)' r
            for a in range(d):
                for h in range(n_c):
                    for l in range(L):
                        acc[l] = 0.0
                    for b in range(d):
                        for l in range(L):
                            acc[l] += G[a, b, l] * F[b, h, l]
                    for l in range(L):
                        GF[a, h, l] = acc[l]
            for h in range(n_c):
                for g in range(h, n_c):
                    for l in range(L):
                        acc[l] = f32(1.0) if g == h else f32(0.0)
                    for a in range(d):
                        for l in range(L):
                            acc[l] += F[a, h, l] * GF[a, g, l]
                    for l in range(L):
                        N[g, h, l] = acc[l]
                for l in range(L):
                    acc[l] = 0.0
                for a in range(d):
                    for l in range(L):
                        acc[l] += GF[a, h, l] * r[a, l]
                for l in range(L):
                    z[h, l] = acc[l]
            # Cholesky N = C C' (lower triangle in place), then C C' z = rhs
            for j in range(n_c):
                for k in range(j):
                    for l in range(L):
                        N[j, j, l] -= N[j, k, l] * N[j, k, l]
                for l in range(L):
                    N[j, j, l] = np.sqrt(N[j, j, l])
                for i in range(j + 1, n_c):
                    for k in range(j):
                        for l in range(L):
                            N[i, j, l] -= N[i, k, l] * N[j, k, l]
                    for l in range(L):
                        N[i, j, l] /= N[j, j, l]
            for i in range(n_c):
                for k in range(i):
                    for l in range(L):
                        z[i, l] -= N[i, k, l] * z[k, l]
                for l in range(L):
                    z[i, l] /= N[i, i, l]
            for i in range(n_c - 1, -1, -1):
                for k in range(i + 1, n_c):
                    for l in range(L):
                        z[i, l] -= N[k, i, l] * z[k, l]
                for l in range(L):
                    z[i, l] /= N[i, i, l]
            # R_k = (r - F z) / gamma, then ||D_k R_k||^2 = R_k' (D_k' D_k) R_k
            for a in range(d):
                for l in range(L):
                    acc[l] = r[a, l]
                for h in range(n_c):
                    for l in range(L):
                        acc[l] -= F[a, h, l] * z[h, l]
                for l in range(L):
                    step[a, l] = acc[l] * inverse
            for l in range(L):
                acc[l] = 0.0
            row = T
            for a in range(d):
                for b in range(a, d):
                    for l in range(L):
                        term = block[row, l] * step[a, l] * step[b, l]
                        acc[l] += term if a == b else f32(2.0) * term
                    row += 1
            for l in range(width):
                out[start + l] = np.sqrt(max(acc[l], 0.0))

    return kernel
