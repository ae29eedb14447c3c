"""`speclens calibrate`: measure this machine again for a pair and print its profile and what changed;
`--show` prints the cached profile (its load times only what the cache lacks, as any load does)."""

from __future__ import annotations

import argparse
import sys

from .common import add_model_args, add_tree_args, load_kwargs, target_kwargs, tree_mode


def add_parser(sub) -> None:
    p = sub.add_parser("calibrate", help="measure this machine again for a pair (kernels, threads, v(n), drafters)")
    p.add_argument("--show", action="store_true", help="print the cached profile instead (only what the cache lacks is timed)")
    add_model_args(p)
    add_tree_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from app.drafting.auto import select
    from app.machine.profile import changes_of, describe
    from app.models import load_model

    log = sys.stderr
    kwargs = load_kwargs(args)
    target = load_model(args.target, device=args.device, **target_kwargs(args), remeasure=not args.show, **kwargs)
    if target.profile is None:
        print(f"no machine profile for {target.name} on {target.device}: nothing is timed or cached there")
        return 0
    if args.show:
        # What the cache holds for this pair; a part it lacks is timed at the next load (or by calibrate).
        for line in describe(target.profile):
            print(line)
        if target.profile.verify is None:
            print("  no step or drafter costs cached: `speclens calibrate` or any load with a draft measures them")
        return 0
    draft_kwargs = dict(kwargs, device=args.draft_device) if args.draft_device else kwargs
    selection = select(target, args.draft, tree=tree_mode(args), remeasure=True, **draft_kwargs)
    profile = target.profile
    assert profile is not None  # select() times the pair into it
    for line in describe(profile):
        print(line)
    print(f"choice: {selection.choice.reason}")
    print("changed:" if target.replaced is not None else "changed: (nothing was cached)")
    for line in changes_of(target.replaced, profile):
        print(f"  {line}")
    print(f"measured in {target.load_seconds + selection.calibration.seconds:.1f} s", file=log)
    return 0
