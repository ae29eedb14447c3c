"""What this machine measures: clocks and load, the thread count, the torch CPU path and its row checks, verify
and drafter timings, and the profile that caches them per model. No Qt here."""
