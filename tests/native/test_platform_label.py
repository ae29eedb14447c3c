"""The kernel's label names the platform build ("AVX2, Windows x86-64"), and where none was built the reason
names the platform, the compiler it lacked and that SpecLens runs on torch (README, "What each platform gets")."""

from __future__ import annotations

import platform
import sys

import pytest

import app.native as native


@pytest.mark.parametrize("system, machine, name", [("linux", "x86_64", "Linux x86-64"),
                                                   ("win32", "AMD64", "Windows x86-64"),
                                                   ("darwin", "arm64", "macOS arm64"),
                                                   ("linux", "aarch64", "Linux arm64"),
                                                   ("darwin", "x86_64", "macOS x86-64")])
def test_the_platform_is_named_for_people(monkeypatch, system, machine, name):
    monkeypatch.setattr(sys, "platform", system)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    assert native.platform_name() == name


def test_a_build_is_labelled_with_its_instructions_and_platform():
    for build in native.builds():
        assert native.build_label(build) == f"{build.isa()}, {native.platform_name()}"


@pytest.mark.parametrize("system, compiler", [("win32", "Visual Studio Build Tools"), ("darwin", "Xcode"),
                                              ("linux", "gcc or clang")])
def test_without_a_build_the_reason_names_the_platform_and_torch(monkeypatch, system, compiler):
    monkeypatch.setattr(native, "_runnable", lambda: ({}, dict.fromkeys(native.BUILDS, "not built")))
    monkeypatch.delenv(native.FORCE, raising=False)
    monkeypatch.setattr(sys, "platform", system)
    module, why = native._load.__wrapped__()
    assert module is None
    assert native.platform_name() in why and compiler in why and "runs on torch" in why, why
