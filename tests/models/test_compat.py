"""The draft pre-flight: same token->id mapping required, padded vocabularies tolerated."""

import pytest
import torch
from permuted import permuted_tokenizer
from tiny_models import char_tokenizer, tiny_model

from app.drafting.compat import check_compatibility, check_tokenizers
from app.drafting.drafts import make_drafter, self_draft
from app.errors import IncompatibleModels
from app.models import LoadedModel, load_model


def loaded(tokenizer, vocab_rows=34, name="m") -> LoadedModel:
    return LoadedModel(tiny_model(vocab_size=vocab_rows), tokenizer, name, name)


def test_identical_tokenizers_are_compatible():
    result = check_compatibility(loaded(char_tokenizer()), loaded(char_tokenizer()))
    assert result.compatible and result.problems == () and result.first_mismatch is None


@pytest.mark.parametrize(("target_rows", "draft_rows"), [(40, 34), (34, 40), (64, 48)])
def test_padded_vocabulary_is_compatible_with_a_note(target_rows, draft_rows):
    result = check_compatibility(loaded(char_tokenizer(), target_rows), loaded(char_tokenizer(), draft_rows))
    assert result.compatible
    assert "masked" in result.explain()


def test_draft_too_small_for_the_target_vocabulary_is_refused():
    result = check_tokenizers(char_tokenizer(), char_tokenizer(), target_rows=34, draft_rows=30)
    assert not result.compatible and "30 embedding rows" in result.explain()


def test_permuted_vocabulary_is_refused_naming_the_first_mismatch():
    result = check_compatibility(loaded(char_tokenizer()), loaded(permuted_tokenizer()))
    assert not result.compatible
    assert result.first_mismatch == (4, "a", "b")
    assert "id 4 is 'a' for the target but 'b' for the draft" in result.explain()


def test_make_drafter_runs_the_preflight(tiny_pair_dirs, tmp_path):
    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    assert make_drafter(str(tiny_pair_dirs[1]), target).name == "draft"
    other = tmp_path / "other"
    tiny_model().save_pretrained(other)
    permuted_tokenizer().save_pretrained(other)
    with pytest.raises(IncompatibleModels, match=r"id 4 is 'a' .* 'b'.*--draft self.*prompt-lookup"):
        make_drafter(str(other), target)


def test_self_draft_is_a_bf16_copy_sharing_no_tensors(tiny_pair_dirs):
    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    drafter = self_draft(target)
    assert drafter.model.dtype == torch.bfloat16 and target.dtype == torch.float32
    target_ptrs = {p.data_ptr() for p in target.model.parameters()}
    assert not target_ptrs & {p.data_ptr() for p in drafter.model.parameters()}
    assert "self-draft" in drafter.name


def test_prompt_lookup_and_none_need_no_model(tiny_pair_dirs):
    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    assert make_drafter("none", target) is None
    assert make_drafter("prompt-lookup", target).__class__.__name__ == "PromptLookupDrafter"
