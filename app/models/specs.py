"""Draft specs that name no model; torch-free, so the catalog can list them before torch loads."""

PROMPT_LOOKUP = "prompt-lookup"
SELF_DRAFT = "self"
NO_DRAFT = "none"
TRAINED_DRAFT = "trained"  # the best trained feature draft found for the target
AUTO = "auto"  # the drafter and γ measured fastest on this machine, or none
