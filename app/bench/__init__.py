"""`speclens bench`: SpecLens against Hugging Face generation, and against the Leviathan ceiling.

Qt-free; the GUI-overhead measurement lives in `gui_overhead` and imports app.gui lazily.
"""
