"""Compiled kernels for the ce model-change screening (optional: numba, ``fast`` extra).

The float32 screening of many candidates (:mod:`skmcal.acquisition`) computes,
per candidate, the class probabilities and the small solve of
``skmcal.softmax.SoftmaxPosterior._solves()`` from the packed form ``G_k``:
the step ``R_k`` of the look-ahead, from which the model-change value and its
bounds follow. In numpy each of these is a few dozen passes over arrays of
``CE_CHUNK`` candidates; here they run fused, over blocks of :data:`LANES`
candidates (index ``q``) whose intermediates stay in the cache, the innermost
loops over the block (so that they compile to vector instructions), in single
precision (the exponents of the softmax in double: ``u / gamma`` is large for
small ``gamma``). The results are approximate like their inputs, the float32
forms (about 1e-5 relative); exact values keep the numpy path. Without numba,
the kernels are None and the numpy path scores. Measured at 100,000
candidates, 10 classes, one core: the solves and values about 40 ms against
135 ms for the numpy path (``benchmarks/results/bench_scale_1m_ce.md``).
Besides: the values from the steps and ``D_k' D_k``
(:func:`step_values_kernel`), the products ``v_m v_m'``
(:func:`products_kernel`) and the bounds of
:class:`skmcal.softmax.ChangeSplit` (:func:`split_kernels`).
"""

from __future__ import annotations

import functools

import numpy as np

#: Candidates handled together by the kernel (the innermost loop).
LANES = 128

#: Intervals of ``||u|| / sqrt(e)`` over which :func:`split_kernels`' bound before the
#: step takes its largest value.
INTERVALS = 8


@functools.lru_cache(maxsize=1)
def model_change_kernel():
    """The compiled kernel, or None where numba is not installed.

    ``kernel(forms, latent, basis, gamma, steps, quadratic)``: ``forms`` is
    ``(T, K)``, the upper triangles (``np.triu_indices(d)`` order, ``T = d (d +
    1) / 2``) of ``G_k``, ``latent`` ``(n_c, K)``, ``basis`` the zero-sum basis
    ``E`` (``(n_c, d)``); writes the steps ``R_k`` into ``steps`` (``(d, K)``,
    float32) and ``g^2 R_k' G_k R_k`` into ``quadratic`` (``(K,)``, float32).
    The model-change value is then ``sqrt(R_k' (D_k' D_k) R_k)``.
    """
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(nogil=True, cache=True, error_model="numpy")
    def kernel(forms, latent, basis, gamma, steps, quadratic):  # pragma: no cover - compiled
        n_c, d = basis.shape
        # a lane count the compiler does not know: loops of a constant count are
        # unrolled into scalar code instead of vectorised
        L = min(LANES, max(quadratic.shape[0], 1))
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
        block = np.zeros((T, L), dtype=forms.dtype)
        squared = f32(gamma * gamma)
        u = np.zeros((n_c, L))
        n = forms.shape[1]
        for start in range(0, n, L):
            width = min(L, n - start)
            block[:, :width] = forms[:, start : start + width]
            u[:, :width] = latent[:, start : start + width]
            # class probabilities pi = softmax(u / gamma); the pseudo-label: the first argmax
            for q in range(L):
                top[q] = u[0, q]
                label[q] = 0
            for c in range(1, n_c):
                for q in range(L):
                    if u[c, q] > top[q]:
                        top[q] = u[c, q]
                        label[q] = c
            total[:] = 0.0
            for c in range(n_c):
                for q in range(L):
                    pi[c, q] = np.exp(f32((u[c, q] - top[q]) * scale))
                    total[q] += pi[c, q]
            for c in range(n_c):
                for q in range(L):
                    pi[c, q] /= total[q]
                    s[c, q] = np.sqrt(pi[c, q])
            # E' pi, E' F = E' diag(s) - (E' pi) s', the residual E' (pi - yhat)
            for a in range(d):
                for q in range(L):
                    acc[q] = 0.0
                for c in range(n_c):
                    for q in range(L):
                        acc[q] += basis[c, a] * pi[c, q]
                for q in range(L):
                    mean[a, q] = acc[q]
                    r[a, q] = acc[q] - basis[label[q], a]
                for h in range(n_c):
                    for q in range(L):
                        F[a, h, q] = s[h, q] * (basis[h, a] - mean[a, q])
            # G_k from its packed upper triangle
            row = 0
            for a in range(d):
                for b in range(a, d):
                    for q in range(L):
                        G[a, b, q] = block[row, q]
                        G[b, a, q] = block[row, q]
                    row += 1
            # N = I + F' G F (Woodbury: eigenvalues >= 1), rhs = (G F)' r
            for a in range(d):
                for h in range(n_c):
                    for q in range(L):
                        acc[q] = 0.0
                    for b in range(d):
                        for q in range(L):
                            acc[q] += G[a, b, q] * F[b, h, q]
                    for q in range(L):
                        GF[a, h, q] = acc[q]
            for h in range(n_c):
                for g in range(h, n_c):
                    for q in range(L):
                        acc[q] = f32(1.0) if g == h else f32(0.0)
                    for a in range(d):
                        for q in range(L):
                            acc[q] += F[a, h, q] * GF[a, g, q]
                    for q in range(L):
                        N[g, h, q] = acc[q]
                for q in range(L):
                    acc[q] = 0.0
                for a in range(d):
                    for q in range(L):
                        acc[q] += GF[a, h, q] * r[a, q]
                for q in range(L):
                    z[h, q] = acc[q]
            # Cholesky N = C C' (lower triangle in place), then C C' z = rhs
            for j in range(n_c):
                for k in range(j):
                    for q in range(L):
                        N[j, j, q] -= N[j, k, q] * N[j, k, q]
                for q in range(L):
                    N[j, j, q] = np.sqrt(N[j, j, q])
                for i in range(j + 1, n_c):
                    for k in range(j):
                        for q in range(L):
                            N[i, j, q] -= N[i, k, q] * N[j, k, q]
                    for q in range(L):
                        N[i, j, q] /= N[j, j, q]
            for i in range(n_c):
                for k in range(i):
                    for q in range(L):
                        z[i, q] -= N[i, k, q] * z[k, q]
                for q in range(L):
                    z[i, q] /= N[i, i, q]
            for i in range(n_c - 1, -1, -1):
                for k in range(i + 1, n_c):
                    for q in range(L):
                        z[i, q] -= N[k, i, q] * z[k, q]
                for q in range(L):
                    z[i, q] /= N[i, i, q]
            # R_k = (r - F z) / gamma, then g^2 R_k' G_k R_k
            for a in range(d):
                for q in range(L):
                    acc[q] = r[a, q]
                for h in range(n_c):
                    for q in range(L):
                        acc[q] -= F[a, h, q] * z[h, q]
                for q in range(L):
                    step[a, q] = acc[q] * inverse
            for q in range(L):
                acc[q] = 0.0
            for a in range(d):
                for b in range(d):
                    for q in range(L):
                        acc[q] += G[a, b, q] * step[a, q] * step[b, q]
            for q in range(width):
                quadratic[start + q] = max(acc[q], f32(0.0)) * squared
            for a in range(d):
                for q in range(width):
                    steps[a, start + q] = step[a, q]

    return kernel


@functools.lru_cache(maxsize=1)
def products_kernel():
    """The compiled products ``v_m v_m'`` of many nodes, or None where numba is not installed.

    ``kernel(rows, out)``: ``rows`` the ``(K, M)`` eigenvector rows; writes
    into ``out`` (``(M (M + 1) / 2, K)``, float32) the products ``m <= m'`` in
    ``np.triu_indices`` order, each the float32 product of the rows' float32
    entries (as numpy computes them), in one call that holds no GIL.
    """
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(nogil=True, cache=True)
    def kernel(rows, out):  # pragma: no cover - compiled
        n, M = rows.shape
        columns = np.empty((M, n), dtype=np.float32)
        for k in range(n):
            for m in range(M):
                columns[m, k] = rows[k, m]
        row = 0
        for m in range(M):
            first = columns[m]
            for second in range(m, M):
                other = columns[second]
                target = out[row]
                for k in range(n):
                    target[k] = first[k] * other[k]
                row += 1

    return kernel


@functools.lru_cache(maxsize=1)
def split_kernels():
    """The compiled bounds of :class:`skmcal.softmax.ChangeSplit`, or None without numba.

    ``(before, after)``. ``before(projections, latent, gamma, rest, weights,
    out)``: ``projections`` the ``E p_i`` (``(r, n_c, K)``), ``latent``
    ``(n_c, K)``; writes the bounds before the step into ``out`` (``(K,)``):
    the smaller of the interval bound and the trust-region bound of
    :class:`skmcal.softmax.ChangeSplit`.
    ``after(projections, chosen, steps, basis, quadratic, rest, weights,
    out)``: the bounds given the steps ``R_k`` (``(d, n)``) and ``g^2 R_k'
    G_k R_k`` (``(n,)``) of the nodes ``chosen`` (``(n,)``, positions along the
    last axis of ``projections``), into ``out`` (``(n,)``). Both in single
    precision; ``||B^1/2 E p_i||^2`` as a sum of squares (no cancellation).
    """
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(nogil=True, cache=True, error_model="numpy")
    def before(projections, latent, gamma, rest, weights, out):  # pragma: no cover - compiled
        r, n_c, n = projections.shape
        f32 = np.float32
        pi = np.empty((n_c, n), dtype=f32)
        top = np.empty(n)
        total = np.zeros(n)
        limits = np.empty((r, n), dtype=f32)  # ||B^1/2 E p_i||^2 / g^2
        mean = np.empty(n, dtype=f32)
        budget = np.empty(n, dtype=f32)
        best = np.zeros(n, dtype=f32)
        acc = np.empty(n, dtype=f32)
        scale = 1.0 / gamma
        factor = f32(1.0 / (gamma * gamma))
        label = np.zeros(n, dtype=np.int64)  # the pseudo-label: the first argmax
        towards = np.zeros(n)  # a^2 of the trust-region bound below
        spread = np.zeros(n)  # b^2 of the trust-region bound below
        for k in range(n):
            top[k] = latent[0, k]
        for c in range(1, n_c):
            for k in range(n):
                if latent[c, k] > top[k]:
                    top[k] = latent[c, k]
                    label[k] = c
        for c in range(n_c):
            for k in range(n):
                value = np.exp((latent[c, k] - top[k]) * scale)
                pi[c, k] = f32(value)
                total[k] += value
        for c in range(n_c):
            for k in range(n):
                pi[c, k] = f32(pi[c, k] / total[k])
        for i in range(r):
            mean[:] = 0.0
            limits[i] = 0.0
            for c in range(n_c):
                for k in range(n):
                    mean[k] += pi[c, k] * projections[i, c, k]
            for c in range(n_c):
                for k in range(n):
                    gap = projections[i, c, k] - mean[k]
                    limits[i, k] += pi[c, k] * gap * gap
            scaled = weights[i] * factor  # not `weight`: that one is float32 below
            for k in range(n):
                limits[i, k] *= factor
                spread[k] += weights[i] * limits[i, k]
                gap = projections[i, label[k], k] - mean[k]
                towards[k] += 0.25 * scaled * gap * gap
        # ||u|| = t sqrt(e), t in [0, 1]: g^2 R' G R <= e t (1 - t), (p_i' R)^2 <= e t^2 limit_i;
        # the largest over each interval of t, from the ends of the interval
        for interval in range(INTERVALS):
            low, high = interval / INTERVALS, (interval + 1) / INTERVALS
            share = 0.25 if low <= 0.5 <= high else max(low * (1 - low), high * (1 - high))
            for k in range(n):
                budget[k] = f32(share)
                acc[k] = f32(rest * share)
            square = f32(high * high)
            for i in range(r):
                weight = f32(weights[i])
                for k in range(n):
                    taken = min(square * limits[i, k], budget[k])
                    budget[k] -= taken
                    acc[k] += weight * taken
            for k in range(n):
                best[k] = max(best[k], acc[k])
        # The trust-region bound. u is reachable iff u'(w - u) >= 0 (u = (I + H)^-1 w,
        # H >= 0), i.e. u = w/2 + x, |x| <= rho = sqrt(e)/2, and then u'Hu = rho^2 - |x|^2;
        # with Q = sum_i weights_i q_i q_i' / g^2 (q_i = B^1/2 E p_i):
        # value^2 <= rest (rho^2 - |x|^2) + (x + w/2)' Q (x + w/2)
        #         <= rest (rho^2 - r^2) + (a + b r)^2, r = |x|, where
        # a^2 = w'Qw/4 = sum_i weights_i ((E p_i)_j - pi'E p_i)^2 / (4 g^2) (B^1/2 w = e_j - pi)
        # and b^2 = tr(Q) = sum_i weights_i limit_i >= lambda_max(Q).
        for k in range(n):
            e = total[k] - 1.0  # 1 / pi_j - 1 (the top class has exp(0) = 1)
            rho2 = 0.25 * e
            a = np.sqrt(towards[k])
            b2 = spread[k]
            b = np.sqrt(b2)
            rho = np.sqrt(rho2)
            square = max(rest * rho2 + a * a, (a + b * rho) ** 2)
            if rest > b2:
                inner = a * b / (rest - b2)
                if inner < rho:
                    square = max(square, rest * (rho2 - inner * inner) + (a + b * inner) ** 2)
            # the interval bound: best (a share of e) times e
            out[k] = np.sqrt(min(best[k] * f32(e), f32(square)))

    @numba.njit(nogil=True, cache=True, error_model="numpy")
    def after(projections, chosen, steps, basis, quadratic, rest, weights, out):  # pragma: no cover
        r, n_c, _ = projections.shape
        d, n = steps.shape
        f32 = np.float32
        full = np.zeros((n_c, n), dtype=f32)  # E R_k
        for c in range(n_c):
            for a in range(d):
                coefficient = f32(basis[c, a])
                for k in range(n):
                    full[c, k] += coefficient * steps[a, k]
        acc = np.empty(n, dtype=f32)
        along = np.empty(n, dtype=f32)
        for k in range(n):
            acc[k] = f32(rest) * quadratic[k]
        for i in range(r):
            along[:] = 0.0
            for c in range(n_c):
                for k in range(n):
                    along[k] += projections[i, c, chosen[k]] * full[c, k]
            weight = f32(weights[i])
            for k in range(n):
                acc[k] += weight * along[k] * along[k]
        for k in range(n):
            out[k] = np.sqrt(acc[k])

    return before, after


@functools.lru_cache(maxsize=1)
def step_values_kernel():
    """The compiled model-change values from the steps, or None where numba is not installed.

    ``kernel(square, steps, out)``: ``square`` the packed ``D_k' D_k`` (``(T,
    K)``, ``np.triu_indices(d)`` order), ``steps`` the ``R_k`` (``(d, K)``);
    writes ``sqrt(R_k' (D_k' D_k) R_k)`` into ``out`` (``(K,)``, float32).
    """
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(nogil=True, cache=True, error_model="numpy")
    def kernel(square, steps, out):  # pragma: no cover - compiled
        d, n = steps.shape
        f32 = np.float32
        acc = np.zeros(n, dtype=f32)
        row = 0
        for a in range(d):
            for b in range(a, d):
                weight = f32(1.0) if a == b else f32(2.0)
                for k in range(n):
                    acc[k] += weight * square[row, k] * steps[a, k] * steps[b, k]
                row += 1
        for k in range(n):
            out[k] = np.sqrt(max(acc[k], f32(0.0)))

    return kernel
