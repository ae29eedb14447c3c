"""Drafters and auto's choice among them: the registry of draft specs, the factories that build a drafter for a
loaded target, trained feature drafts, the suffix corpus, the catalog of what can be loaded by name, the
compatibility pre-flight, and auto's measured choice with its probes. No Qt here."""
