"""How close the native path is to the model as transformers loads it (float32: for a GGUF, the file's
own weights dequantised, so only the native activation rounding differs).

The measure: teacher-forced held-out chat (resources/quality/heldout_chat.json: held-out prompts with the
embedded model's float32 greedy answers, scored on the answers) and held-out text (heldout_text.txt, scored
everywhere). At every scored position, top-1 agreement with float32's argmax and KL(float32 ‖ native) in
nats; their means with 95% intervals from a bootstrap over sequences (positions of one sequence are not
independent). The same measure scores any other logits on the same tokens: llama.cpp's, in the bench.

A load chooses the activation digits each matrix role multiplies (descriptor.Digits) from their measured
sensitivity: one digit (half the int8 arithmetic a verified row costs) for every role whose one-digit
rounding adds little KL, two where it adds more, and keeps the mix only where its KL and agreement stay
within the gate (GATE_KL, GATE_AGREEMENT), which is llama.cpp's own distance from float32 on this measure
(docs/native-kernels.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from app.native.descriptor import TWO_DIGITS, Digits
from app.paths import resource_path

BOOTSTRAP = 1000
KL_ROWS = 32  # rows of logits taken to float64 at a time
LOAD_TOKENS = 1200  # scored positions at load; the bench scores every held-out token (about 4,800)
# llama.cpp 0.3.36 on the embedded model's GGUF, this measure, all 5,286 held-out tokens (docs/native-kernels.md):
# its mean KL and its top-1 agreement, the distance from float32 a native variant may keep.
GATE_KL, GATE_AGREEMENT = 0.00292, 0.968
ROLE_SHARE = 0.25  # a role reads one digit while its own added KL stays under this share of the gate


@dataclass(frozen=True)
class Scored:
    """Token ids [T] and the first position scored: position t predicts ids[t + 1], for t >= start."""

    ids: torch.Tensor
    start: int


@dataclass(frozen=True)
class Fidelity:
    tokens: int
    agreement: float  # share of scored positions where the argmax is float32's
    agreement_ci: tuple[float, float]
    kl: float  # mean KL(float32 ‖ this) in nats
    kl_ci: tuple[float, float]
    digits: Digits = field(default=TWO_DIGITS)
    against: str = "fp32"  # the reference: transformers' float32 model, or "two digits" (TWO_DIGITS_REFERENCE)

    @property
    def passes(self) -> bool:
        """Within llama.cpp's own distance from float32 on this measure (its KL and its agreement). The point
        agreement, not its lower bound: a small random model's near-ties flip argmaxes at any rounding."""
        return self.kl <= GATE_KL and self.agreement >= GATE_AGREEMENT

    def describe(self) -> str:
        lo, hi = self.agreement_ci
        return (f"{100 * self.agreement:.1f}% top-1 agreement [{100 * lo:.1f}, {100 * hi:.1f}], KL {self.kl:.4f} "
                f"[{self.kl_ci[0]:.4f}, {self.kl_ci[1]:.4f}] nats against {self.against} ({self.tokens:,} tokens, "
                f"{self.digits.label()})")


TWO_DIGITS_REFERENCE = "its own two-digit pass"  # a target too large to hold a float32 copy is measured against

# Measured once on every held-out token (`speclens bench --quality`, docs/native-kernels.md) for files a
# load meets often: it keeps this choice instead of measuring again (the float32 reference and seven
# variants took 27 s of a 49 s first launch of the embedded model on 2 cores). Keyed by the file's content
# (native.direct.fingerprint); `speclens calibrate` measures anew.
MEASURED = {
    "gguf 5dce440-b179c9523d0e6a0f": Fidelity(5286, 0.9807, (0.9766, 0.9844), 0.00109, (0.00102, 0.00117),
                                              Digits.of_code("21211")),  # the embedded SmolLM2-135M Q4_1
    # Qwen2.5-Coder-1.5B-Instruct Q4_K_M (the real pair's target), against its own two-digit pass on 5,130
    # held-out tokens (411 s on 2 cores): gate_up's own KL 0.00053 is under the share that 256 tokens put it over
    "gguf 4298f640-cc324af070c2ecbf": Fidelity(5130, 0.9889, (0.9862, 0.9919), 0.00078, (0.00054, 0.00102),
                                               Digits.of_code("11111"), TWO_DIGITS_REFERENCE),
}


def sequences(tokenizer, budget: int | None = None, context: int | None = None) -> list[Scored]:
    """Held-out chat answers and text, chat first, cut to `budget` scored positions and `context` tokens each."""
    chats = json.loads(resource_path("quality", "heldout_chat.json").read_text(encoding="utf-8"))["chats"]
    text = resource_path("quality", "heldout_text.txt").read_text(encoding="utf-8")
    out: list[Scored] = []
    for chat in chats:
        turns = [{"role": "user", "content": chat["prompt"]}]
        if getattr(tokenizer, "chat_template", None):
            prompt = tokenizer.apply_chat_template(turns, add_generation_prompt=True, return_dict=True,
                                                   return_tensors="pt")["input_ids"][0]
        else:
            prompt = tokenizer(chat["prompt"], return_tensors="pt")["input_ids"][0]
        answer = tokenizer(chat["answer"], add_special_tokens=False, return_tensors="pt")["input_ids"][0]
        out.append(Scored(torch.cat([prompt, answer]), len(prompt) - 1))
    for paragraph in (p.strip() for p in text.split("\n\n")):
        if paragraph:
            out.append(Scored(tokenizer(paragraph, return_tensors="pt")["input_ids"][0], 0))
    return _cut(out, budget, context)


def _cut(seqs: list[Scored], budget: int | None, context: int | None) -> list[Scored]:
    kept, left = [], budget
    for s in seqs:
        ids = s.ids if context is None else s.ids[:context]
        n = len(ids) - 1 - s.start
        if n <= 0:
            continue
        if left is not None:
            if left <= 0:
                break
            if n > left:
                ids, n = ids[: s.start + left + 1], left
            left -= n
        kept.append(Scored(ids, s.start))
    return kept


def _alternate(seqs: list[Scored], budget: int) -> list[Scored]:
    """Chat and text sequences in turn, so a short budget holds both kinds."""
    chat = [s for s in seqs if s.start > 0]
    text = [s for s in seqs if s.start == 0]
    mixed = [s for pair in zip(chat, text, strict=False) for s in pair]
    longer = chat if len(chat) > len(text) else text
    return _cut(mixed + longer[len(mixed) // 2 :], budget, None)


Logits = Callable[[torch.Tensor], torch.Tensor]  # ids [T] -> logits [T, V] (every position)


def fp32_logits(model) -> Logits:
    """transformers' model (float32): every position's logits."""
    def run(ids: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return model(input_ids=ids.view(1, -1)).logits[0].float()
    return run


def remembered(logits: Logits) -> Logits:
    """logits, each sequence's computed once (a reference read again when the chosen mix is measured)."""
    seen: dict[tuple[int, ...], torch.Tensor] = {}

    def run(ids: torch.Tensor) -> torch.Tensor:
        key = tuple(ids.tolist())
        if key not in seen:
            seen[key] = logits(ids)
        return seen[key]
    return run


def native_logits(backend) -> Logits:
    """A native backend's own pass over the sequence: every position's logits."""
    def run(ids: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return backend.forward(backend.new_cache(), ids, keep=len(ids))
    return run


def per_sequence(reference: Logits, others: dict[str, Logits], seqs: Iterable[Scored],
                 vocab: int) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """{name: [(agree bool [n], kl float64 [n]) per sequence]}: each scored position against the reference."""
    out: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {name: [] for name in others}
    for s in seqs:
        ref = reference(s.ids)[s.start : len(s.ids) - 1, :vocab]
        for name, logits in others.items():
            got = logits(s.ids)[s.start : len(s.ids) - 1, :vocab]
            agree, kl = [], []
            for r in range(0, len(ref), KL_ROWS):  # in float64 a few rows at a time: a 151,936-token row is 1.2 MB
                log_p = F.log_softmax(ref[r : r + KL_ROWS].double(), -1)
                log_q = F.log_softmax(got[r : r + KL_ROWS].double(), -1)
                kl.append((log_p.exp() * (log_p - log_q)).sum(-1).clamp_min(0))
                agree.append(got[r : r + KL_ROWS].argmax(-1) == ref[r : r + KL_ROWS].argmax(-1))
            out[name].append((torch.cat(agree).numpy(), torch.cat(kl).numpy()))
    return out


def summarize(rows: list[tuple[np.ndarray, np.ndarray]], digits: Digits = TWO_DIGITS, seed: int = 0,
              against: str = "fp32") -> Fidelity:
    """Means over positions, 95% intervals from resampling whole sequences (BOOTSTRAP times)."""
    agree = np.array([a.sum() for a, _ in rows], dtype=np.float64)
    kl = np.array([k.sum() for _, k in rows])
    n = np.array([len(a) for a, _ in rows], dtype=np.float64)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(rows), size=(BOOTSTRAP, len(rows)))
    total = n[picks].sum(1)
    boot_agree, boot_kl = agree[picks].sum(1) / total, kl[picks].sum(1) / total
    return Fidelity(int(n.sum()), float(agree.sum() / n.sum()), _interval(boot_agree), float(kl.sum() / n.sum()),
                    _interval(boot_kl), digits, against)


def _interval(samples: np.ndarray) -> tuple[float, float]:
    lo, hi = np.quantile(samples, [0.025, 0.975])
    return float(lo), float(hi)


def choose_digits(make_backend: Callable[[Digits], object], model, tokenizer, vocab: int,
                  budget: int = LOAD_TOKENS, reference: Logits | None = None) -> tuple[Fidelity, dict[str, Fidelity]]:
    """(the chosen variant's fidelity, every measured variant's) for the native backends `make_backend(digits)`
    against `reference`: transformers' float32 `model` where None (the model's config gives the context limit
    either way). Measured: two digits everywhere, and each role alone at one digit; chosen: one digit for every
    role whose own added KL is under ROLE_SHARE of the gate, and that mix measured too. Two digits everywhere
    where the mix fails the gate.

    A target too large to hold a float32 copy is measured against its own two-digit pass (`two_digit_reference`):
    about 16-bit activations, far below its weights' rounding, stand for float32, and two digits are then the
    reference itself (KL 0)."""
    limit = getattr(model.config.get_text_config(), "max_position_embeddings", None)
    seqs = _alternate(sequences(tokenizer, context=limit), budget)
    against = "fp32" if reference is None else TWO_DIGITS_REFERENCE
    reference = reference or fp32_logits(model)
    variants = {role: TWO_DIGITS.with_role(role, 1) for role in Digits.ROLES}
    if against == "fp32":
        variants = {"two": TWO_DIGITS, **variants}
    measured = per_sequence(reference, {k: native_logits(make_backend(d)) for k, d in variants.items()}, seqs, vocab)
    found = {k: summarize(measured[k], d, against=against) for k, d in variants.items()}
    if "two" not in found:  # the reference itself
        scored = sum(len(a) for a, _ in measured[Digits.ROLES[0]])
        found["two"] = Fidelity(scored, 1.0, (1.0, 1.0), 0.0, (0.0, 0.0), TWO_DIGITS, against)
    base = found["two"].kl
    mix = TWO_DIGITS
    for role in Digits.ROLES:
        if found[role].kl - base < ROLE_SHARE * GATE_KL:
            mix = mix.with_role(role, 1)
    if mix != TWO_DIGITS:
        found["chosen"] = summarize(per_sequence(reference, {"chosen": native_logits(make_backend(mix))},
                                                 seqs, vocab)["chosen"], mix, against=against)
        if found["chosen"].passes:
            return found["chosen"], found
    return found["two"], found


LARGE_TOKENS = 256  # scored positions against the two-digit pass: a 1.5B target's seven passes in ~10 s


def two_digit_reference(make_backend: Callable[[Digits], object]) -> Logits:
    """The two-digit pass as a reference, each sequence's logits computed once."""
    return remembered(native_logits(make_backend(TWO_DIGITS)))
