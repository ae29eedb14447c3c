"""Policy: choosing the drafter and γ by measured cost, and following the machine live. Pure arithmetic, no torch.

cost.py: what a round yields and costs (chains, trees); lookup_cost.py: the same for prompt lookup per
round and lookup-else-draft; choose.py: the load-time choice; live.py and live_lookup.py: the live γ
controllers (protocols.LiveController); switch.py: when auto drops its draft. The names below are the
package's surface; import them from here.
"""

from .choose import MARGIN, TREE_MODES, Choice, Limit, Option, choose, limit_of, option_for
from .cost import (
    AUTO_GAMMA_MAX,
    TREE_DEPTH,
    TREE_NODES_MAX,
    DrafterProfile,
    VerifyCosts,
    best_gamma,
    best_nodes,
    chain_speedup,
    expected_tokens,
    gamma_bound,
    speedup,
    tree_accepted,
)
from .live import AUTO_GAMMA_START, LIVE_WEIGHT, AutoGamma, TreeSize
from .live_lookup import DRAFT, EXPLORE_EVERY, LOOKUP, TARGET, GatedLookupGamma, LookupElseGamma
from .lookup_cost import best_draft_gamma, mixed_speedup, predict, round_yield, worth_proposing
from .switch import MEASURED_FLOOR, MEASURED_TOKENS, RECHECK_ROUNDS, Switch, recheck

__all__ = [
    "AUTO_GAMMA_MAX", "AUTO_GAMMA_START", "DRAFT", "EXPLORE_EVERY", "LIVE_WEIGHT", "LOOKUP", "MARGIN",
    "MEASURED_FLOOR", "MEASURED_TOKENS", "RECHECK_ROUNDS", "TARGET", "TREE_DEPTH", "TREE_MODES", "TREE_NODES_MAX",
    "AutoGamma", "Choice", "DrafterProfile", "GatedLookupGamma", "Limit", "LookupElseGamma", "Option", "Switch", "TreeSize",
    "VerifyCosts", "best_draft_gamma", "best_gamma", "best_nodes", "chain_speedup", "choose", "expected_tokens", "gamma_bound",
    "limit_of", "mixed_speedup", "option_for", "predict", "recheck", "round_yield", "speedup", "tree_accepted",
    "worth_proposing",
]
