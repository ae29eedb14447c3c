"""A tokenizer of another family in miniature: the tiny character vocabulary with two ids swapped."""

from tiny_models import CHARS, SPECIALS
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast


def permuted_tokenizer():
    """Same tokens, but 'a' and 'b' swapped ids: a different family in miniature."""
    chars = CHARS.copy()
    chars[1], chars[2] = chars[2], chars[1]
    vocab = {t: i for i, t in enumerate(SPECIALS + chars)}
    raw = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    raw.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
