"""The native kernel on a tiny random Llama, on every build this CPU runs (AVX-512 VNNI, AVX2, generic C):
close to transformers' float32, and every row bit-identical whatever rows share its pass (counts, threads,
a tree), which greedy speculation's exactness rests on. The odd shapes (tests/native/odd_shapes.py) run
here in-process, and under the sanitizers in tests/native/test_sanitized.py."""

import sys
from pathlib import Path

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import app.native as native_package
from app.native import active_build, builds

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "native"))
import odd_shapes  # noqa: E402

pytestmark = pytest.mark.skipif(active_build() is None, reason="the native kernel is not built here")
BUILDS = builds()


@pytest.fixture(scope="module", params=BUILDS, ids=[b.isa() for b in BUILDS])
def pair(request):
    from app.native.backend import NativeBackend
    from app.native.build import ModuleFloats, assemble, native_support, parts_of

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=80, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    model = LlamaForCausalLM(config).eval()
    assert native_support(model) is None
    return model, NativeBackend(assemble(config, parts_of(config, ModuleFloats(model)), request.param))


@pytest.mark.parametrize("build", BUILDS, ids=[b.isa() for b in BUILDS])
@pytest.mark.parametrize("shape", list(odd_shapes.SHAPES))
def test_odd_shapes_on_every_build(build, shape):
    model = odd_shapes.tiny_model(shape)
    native = odd_shapes.backend_of(model, build)
    odd_shapes.check_close_to_float32(model, native)
    odd_shapes.check_rows_and_threads(native, model.config.vocab_size)
    odd_shapes.check_tree_row_equals_chain(native, model.config.vocab_size)


def test_logits_follow_transformers_float32(pair):
    model, native = pair
    ids = torch.randint(0, 80, (20,))
    with torch.inference_mode():
        ref = model(ids.view(1, -1)).logits[0]
    out = native.forward(native.new_cache(), ids, keep=20)
    assert out.shape == ref.shape
    assert (out - ref).abs().max() < 2e-2 * ref.abs().max()


def test_rows_are_identical_for_any_row_count_and_thread_count(pair):
    _, native = pair
    ids = torch.randint(0, 80, (17,))
    whole = native.forward(native.new_cache(), ids, keep=17)
    cache = native.new_cache()
    native.forward(cache, ids[:5], keep=1)
    parts = [native.forward(cache, ids[5:8], keep=3), native.forward(cache, ids[8:9], keep=1),
             native.forward(cache, ids[9:], keep=8)]
    assert torch.equal(torch.cat(parts), whole[5:])
    threads = native_package._threads
    try:
        native_package.set_threads(2)
        assert torch.equal(native.forward(native.new_cache(), ids, keep=17), whole)
    finally:
        native_package.set_threads(threads)


def test_a_tree_row_equals_its_path_run_as_a_chain(pair):
    _, native = pair
    ids = torch.randint(0, 80, (10,))
    cache = native.new_cache()
    native.forward(cache, ids[:6], keep=1)
    # two siblings after the prefix: node 0 = ids[6], node 1 = another token; node 2 = ids[7] under node 0
    tokens = torch.tensor([int(ids[6]), (int(ids[6]) + 1) % 80, int(ids[7])])
    positions = torch.tensor([6, 6, 7])
    visible = torch.ones(3, 6 + 3, dtype=torch.bool)
    visible[:, 6:] = torch.tensor([[1, 0, 0], [0, 1, 0], [1, 0, 1]], dtype=torch.bool)
    tree = native.tree_forward(cache, tokens, positions, visible, keep=3)
    chain = native.forward(native.new_cache(), ids[:8], keep=2)
    assert torch.equal(tree[0], chain[0]) and torch.equal(tree[2], chain[1])
    # planted twin: node 2 also seeing its sibling (node 1) gives other logits, so the check above can fail
    leak = visible.clone()
    leak[2, 7] = True
    cache2 = native.new_cache()
    native.forward(cache2, ids[:6], keep=1)
    assert not torch.equal(native.tree_forward(cache2, tokens, positions, leak, keep=3)[2], chain[1])
    # compaction keeps the accepted path (node 0, node 2) in slots 6, 7: the next row is the chain's
    native.compact(cache, 6, [0, 2])
    assert torch.equal(native.forward(cache, ids[8:9], keep=1)[0],
                       native.forward(native.new_cache(), ids[:9], keep=1)[0])


def test_a_later_tree_level_sees_only_its_ancestors_among_the_cached_levels(pair):
    """A draft model's tree expansion feeds one level a pass: a level-2 row sees the context and its parent,
    not its parent's cached sibling. Before the fix such a pass raised ("tree rows see every cached slot"),
    so a ModelTreeDrafter on a native draft failed at its second level."""
    _, native = pair
    ids = torch.randint(0, 80, (10,))
    cache = native.new_cache()
    native.forward(cache, ids[:6], keep=1)
    level1 = torch.tensor([int(ids[6]), (int(ids[6]) + 1) % 80])  # node 0 on the path, node 1 its sibling
    first = torch.ones(2, 6 + 2, dtype=torch.bool)
    first[:, 6:] = torch.eye(2, dtype=torch.bool)
    native.tree_forward(cache, level1, torch.tensor([6, 6]), first, keep=2)
    second = torch.ones(1, 6 + 3, dtype=torch.bool)
    second[0, 7] = False  # node 2 (ids[7], under node 0) does not see node 1
    row = native.tree_forward(cache, ids[7:8], torch.tensor([7]), second, keep=1)[0]
    chain = native.forward(native.new_cache(), ids[:8], keep=1)[0]
    assert torch.equal(row, chain)
    # planted twin: the same row also seeing the cached sibling is another row
    cache.rollback(8)
    second[0, 7] = True
    assert not torch.equal(native.tree_forward(cache, ids[7:8], torch.tensor([7]), second, keep=1)[0], chain)


def test_threads_kept_off_their_cores_lose_and_double_no_work(pair):
    """Six threads on this machine's few cores: workers are often late for a region, and the caller claims
    the chunks they would have taken. Every pass still equals the one-thread pass bit for bit."""
    _, native = pair
    ids = torch.randint(0, 80, (9,))
    threads = native_package._threads
    try:
        native_package.set_threads(1)
        alone = native.forward(native.new_cache(), ids, keep=9)
        native_package.set_threads(6)
        for _ in range(40):
            assert torch.equal(native.forward(native.new_cache(), ids, keep=9), alone)
    finally:
        native_package.set_threads(threads)
