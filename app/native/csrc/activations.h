/* The float work between the matmuls, reference form: act = silu(gate) * up over f values. */

static void silu_mul_ref(const float *gate, const float *up, int f, float *act) {
    for (int i = 0; i < f; i++) act[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}
