#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/family/mse.py FILE - reads an MSE file as Moose would, and prints the FAMIX
model sqcalls --mse wrote in it, one fact a line, sorted, for an exact comparison:

    class Calls
    method Calls>>busy: 50            (calls, from the method's FAMIX.Comment)
    invocation Calls>>outer -> Calls>>busy: 50

The parser follows MSE's published grammar (Fame; moosetechnology.org/docs/mse):

    Root := Document ?                     Document := OPEN ElementNode * CLOSE
    ElementNode := OPEN ELEMENTNAME Serial ? AttributeNode * CLOSE
    Serial := OPEN ID INTEGER CLOSE        AttributeNode := OPEN SIMPLENAME ValueNode * CLOSE
    ValueNode := Primitive | Reference | ElementNode
    Primitive := STRING | NUMBER | Boolean     Reference := OPEN REF (INTEGER | ELEMENTNAME) CLOSE
    STRING := ( "'" [^'] * "'" ) +  (so '' inside is a quote)    comment := '"' [^"] * '"'

and the model is checked against FAMIX 3: the entity types and the attributes each may
have, unique ids, every reference resolved to an entity of the right type. Anything
else exits 1 with the reason and where."""
import re
import sys

TOKEN = re.compile(r"""\s+|"[^"]*"|(?P<open>\()|(?P<close>\))|(?P<id>id:)|(?P<ref>ref:)|
    (?P<string>(?:'[^']*')+)|(?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|
    (?P<bool>true|false)(?![A-Za-z0-9_.])|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)""", re.X)

# FAMIX 3: each entity type sqcalls writes, its attributes, and the types they refer to
FAMIX = {
    "FAMIX.Namespace": {"name": str},
    "FAMIX.Class": {"name": str, "container": "FAMIX.Namespace"},
    "FAMIX.Method": {"name": str, "signature": str, "hasClassScope": bool, "parentType": "FAMIX.Class"},
    "FAMIX.Invocation": {"sender": "FAMIX.Method", "candidates": "FAMIX.Method", "signature": str},
    "FAMIX.Comment": {"content": str, "container": ("FAMIX.Method", "FAMIX.Invocation")},
}


def tokens(text):
    pos = 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise SyntaxError(f"offset {pos}: no MSE token at {text[pos:pos + 30]!r}")
        if m.lastgroup:
            yield m.lastgroup, m.group(m.lastgroup), pos
        pos = m.end()
    yield "end", "", pos


class Parser:
    def __init__(self, text):
        self.toks = list(tokens(text))
        self.i = 0
        self.entities = []

    def peek(self, k=0):
        return self.toks[self.i + k]

    def take(self, kind):
        t = self.toks[self.i]
        if t[0] != kind:
            raise SyntaxError(f"offset {t[2]}: expected {kind}, found {t[1]!r}")
        self.i += 1
        return t[1]

    def document(self):
        if self.peek()[0] == "end":
            return []
        self.take("open")
        while self.peek()[0] == "open":
            self.element()
        self.take("close")
        self.take("end")
        return self.entities

    def element(self):
        self.take("open")
        e = {"type": self.take("name"), "id": None, "attrs": {}}
        if self.peek()[0] == "open" and self.peek(1)[0] == "id":
            self.take("open")
            self.take("id")
            e["id"] = int(self.take("number"))
            self.take("close")
        while self.peek()[0] == "open":
            self.take("open")
            name = self.take("name")
            e["attrs"].setdefault(name, []).extend(self.values())
            self.take("close")
        self.take("close")
        self.entities.append(e)
        return e

    def values(self):
        out = []
        while self.peek()[0] != "close":
            kind, text, _ = self.peek()
            if kind == "string":
                self.i += 1
                out.append(text[1:-1].replace("''", "'"))
            elif kind == "number":
                self.i += 1
                out.append(float(text) if re.search(r"[.eE]", text) else int(text))
            elif kind == "bool":
                self.i += 1
                out.append(text == "true")
            elif kind == "open" and self.peek(1)[0] == "ref":
                self.take("open")
                self.take("ref")
                target = self.take("number") if self.peek()[0] == "number" else self.take("name")
                self.take("close")
                out.append(("ref", int(target) if target.isdigit() else target))
            else:
                out.append(self.element())
        return out


def check(entities):
    by_id = {}
    for e in entities:
        if e["type"] not in FAMIX:
            raise ValueError(f"{e['type']}: not a FAMIX 3 entity sqcalls writes")
        if e["id"] is not None:
            if e["id"] in by_id:
                raise ValueError(f"id {e['id']} twice")
            by_id[e["id"]] = e
    for e in entities:
        for name, values in e["attrs"].items():
            want = FAMIX[e["type"]].get(name)
            if want is None:
                raise ValueError(f"{e['type']} has no attribute {name}")
            for v in values:
                if want in (str, bool):
                    if type(v) is not want:
                        raise ValueError(f"{e['type']}.{name}: {v!r} is not a {want.__name__}")
                elif not (isinstance(v, tuple) and v[1] in by_id and by_id[v[1]]["type"] in
                          (want if isinstance(want, tuple) else (want,))):
                    raise ValueError(f"{e['type']}.{name}: {v!r} is no reference to a {want}")
    return by_id


def one(e, attr, by_id=None):
    v = e["attrs"][attr]
    if len(v) != 1:
        raise ValueError(f"{e['type']}.{attr}: {len(v)} values")
    return by_id[v[0][1]] if by_id else v[0]


def facts(entities, by_id):
    def method(m):
        cls = one(one(m, "parentType", by_id), "name")
        side = " class" if m["attrs"].get("hasClassScope") == [True] else ""
        return f"{cls}{side}>>{one(m, 'name')}"
    counts = {}
    for c in (e for e in entities if e["type"] == "FAMIX.Comment"):
        m = re.match(r"sqcalls: (\d+) calls", one(c, "content"))
        if not m:
            raise ValueError(f"a comment without a count: {one(c, 'content')!r}")
        counts[id(one(c, "container", by_id))] = int(m.group(1))
    out = []
    for e in entities:
        if e["type"] == "FAMIX.Class":
            out.append(f"class {one(e, 'name')}")
        elif e["type"] == "FAMIX.Method":
            out.append(f"method {method(e)} {counts.get(id(e), '?')}")
        elif e["type"] == "FAMIX.Invocation":
            callee = one(e, "candidates", by_id)
            if one(e, "signature") != one(callee, "name"):
                raise ValueError(f"invocation of {method(callee)} with signature {one(e, 'signature')!r}")
            out.append(f"invocation {method(one(e, 'sender', by_id))} -> {method(callee)} {counts.get(id(e), '?')}")
    return sorted(out)


def main(path):
    with open(path, encoding="utf-8") as f:
        entities = Parser(f.read()).document()
    by_id = check(entities)
    print("\n".join(facts(entities, by_id)))


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except (SyntaxError, ValueError, KeyError) as e:
        sys.exit(f"{sys.argv[1]}: {e}")
