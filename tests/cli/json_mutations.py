"""Every JSON type at every level of a document: the paths to its values and the values to put there, for
the tests of what the CLI reads from files (bug.json, triage output)."""
import copy
import json

# A value of every JSON type, and strings a shell, CMake, argparse or the OS would not take literally.
JSON_VALUES = (None, True, False, 0, -1, 1.5, 10 ** 30, "", "x", "a;b", "x y", "$(touch pwned)", "-x", "[x]",
               "\\", "a\u0000b", [], ["asan"], [{}], {}, {"asan": 1})


def paths(doc, at=()):
    """Every path to a value in doc: (key or index, ...), the document itself first."""
    yield at
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, at + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, at + (i,))


def replaced(doc, at, value):
    """A copy of doc with the value at path `at` replaced."""
    if not at:
        return value
    out = copy.deepcopy(doc)
    node = out
    for k in at[:-1]:
        node = node[k]
    node[at[-1]] = value
    return out


def mutations(doc):
    """(path, value, mutated document) for every path in doc and every value of JSON_VALUES."""
    for at in paths(doc):
        for value in JSON_VALUES:
            yield at, value, replaced(doc, at, value)


def assert_each_renders_or_is_refused(test, doc, parse, render, min_refused: int, min_rendered: int) -> None:
    """Every mutation of doc is either refused by `parse` with a one-line ValueError or parsed into something
    `render` (which returns JSON-able values) takes; both happen at least as often as asked."""
    rendered = refused = 0
    for at, value, mutated in mutations(doc):
        with test.subTest(at=at, value=value):
            try:
                parsed = parse(mutated)
            except ValueError as e:
                test.assertEqual(len(str(e).splitlines()), 1, e)
                refused += 1
                continue
            json.dumps(render(parsed))
            rendered += 1
    test.assertGreater(refused, min_refused)
    test.assertGreater(rendered, min_rendered)
