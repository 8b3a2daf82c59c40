"""Dataset labels for the trainers that send a label per sample (OpenRLHF,
slime); the forms are in docs/conformance.md#labels.

    label("B", verifier="choice")                  # '{"verifier": "choice", "gold": "B"}'
    label("42")                                    # '42': the server's -verifier, gold "42"
    label("B", verifier="choice", as_string=False) # {"verifier": "choice", "gold": "B"}

OpenRLHF reads ``labels`` as strings from ``--data.label_key``, so a sample
that names its verifier carries the JSON object as a string (the default
here). slime sends ``--label-key``'s value as it is in the JSONL, so it
may be the object itself (as_string=False) or the string; both work.
"""

import json

__all__ = ["label"]


def label(gold, verifier=None, params=None, as_string=True):
    """The label for one sample. gold: the reference answer (a string; any
    other JSON value is used as its JSON text by the server). verifier: a
    verifier name, or None for the server's -verifier. params: the
    verifier's parameters (a dict) or None. Without verifier and params the
    label is the gold itself; a gold string that happens to hold a JSON
    object with a "verifier" key is wrapped, so that it stays a gold."""
    if verifier is not None and (not isinstance(verifier, str) or not verifier):
        raise ValueError("label: verifier %r: want a non-empty string or None" % (verifier,))
    if params is not None and not isinstance(params, dict):
        raise ValueError("label: params %r: want a dict or None" % (params,))
    if isinstance(gold, bool):
        raise ValueError("label: gold %r: a boolean is not a reference answer" % (gold,))
    if verifier is None and params is None and not _looks_like_object_label(gold):
        return gold
    obj = {}
    if verifier is not None:
        obj["verifier"] = verifier
    obj["gold"] = gold
    if params is not None:
        obj["params"] = params
    return json.dumps(obj, ensure_ascii=False) if as_string else obj


def _looks_like_object_label(gold):
    if not isinstance(gold, str) or not gold.lstrip().startswith("{"):
        return False
    try:
        v = json.loads(gold)
    except ValueError:
        return False
    return isinstance(v, dict) and "verifier" in v
