"""The run format (runtime/records.py) and its file form (runtime/telemetry.py): every
record type survives encode -> JSON -> decode unchanged, and a line of another format is
refused by name, never half-read. Pure, no root."""

import dataclasses
import json
import re

import pytest

from runtime.records import RECORDS, CollectiveDone, FlowSent, RecordError, decode, encode
from runtime.telemetry import Telemetry, read_records

# a value of each annotated field type, none of them a default, so a field the codec
# dropped or swapped would show
SAMPLES = {"int": 7, "float": 2.5, "str": "leaf0-eth5", "bool": True,
           "list": [[0.25, 8e6], [0.5, 4e6]], "dict": {"packets": 3, "mean_s": 1e-4},
           "object": {"command": "stats", "port": 1}}


def sample(cls):
    """A record of ``cls`` with every field, optional ones included, given a value."""
    values = {}
    for f in dataclasses.fields(cls):
        kind = f.type.split(" | ")[0]          # "int | None": an int
        values[f.name] = SAMPLES[kind]
    return cls(**values)


@pytest.mark.parametrize("tag", sorted(RECORDS))
def test_every_record_type_reads_back_as_written(tag):
    cls = RECORDS[tag]
    rec = sample(cls)
    data = json.loads(json.dumps(encode(rec)))
    assert data["type"] == tag == cls.TYPE
    assert set(data) == {f.name for f in dataclasses.fields(cls)} | {"type"}
    back = decode(data)
    assert type(back) is cls and back == rec


def test_optional_fields_left_out_read_back_as_their_defaults():
    rec = CollectiveDone(job=1, rank=2, pass_index=3, algorithm="ring_allreduce",
                         nbytes=4096, start_s=0.5, end_s=1.5, verified=True, steps=6)
    data = encode(rec)
    assert data["pass_index"] == 3 and "pass" not in data and data["host"] is None
    del data["host"]
    assert decode(data) == rec


def test_decode_refuses_an_unknown_key_naming_it():
    data = encode(sample(CollectiveDone))
    data["pass"] = data.pop("pass_index")           # format 1's name of the field
    with pytest.raises(RecordError, match=r"collective: unknown keys \['pass'\]"):
        decode(data)


def test_decode_refuses_an_unknown_or_missing_type_naming_it_and_the_known_ones():
    with pytest.raises(RecordError, match=r"unknown record type 'flow'; known: send_flow, "):
        decode({**encode(sample(FlowSent)), "type": "flow"})
    with pytest.raises(RecordError, match="unknown record type None"):
        decode({"job": 1})


def test_decode_refuses_a_record_missing_a_required_field():
    data = encode(sample(FlowSent))
    del data["bytes"]
    with pytest.raises(RecordError, match="send_flow: .*bytes"):
        decode(data)


def test_a_telemetry_file_reads_back_every_record_and_each_type_alone(tmp_path):
    path = str(tmp_path / "h0.jsonl")
    recs = [sample(RECORDS[tag]) for tag in sorted(RECORDS)]
    tele = Telemetry(path)
    for r in recs:
        tele.write(r)
    tele.close()
    assert tele.records == len(RECORDS)
    assert read_records(path) == recs
    for r in recs:
        assert read_records(path, type(r)) == [r]


def test_a_line_of_another_format_is_named_by_file_and_line(tmp_path):
    path = tmp_path / "h0.jsonl"
    old = encode(sample(CollectiveDone))
    old["pass"] = old.pop("pass_index")
    path.write_text(json.dumps(encode(sample(FlowSent)), separators=(",", ":")) + "\n"
                    + json.dumps(old, separators=(",", ":")) + "\n")
    with pytest.raises(RecordError, match=re.escape(f"{path}, line 2: collective: unknown keys")):
        read_records(str(path), CollectiveDone)
    assert len(read_records(str(path), FlowSent)) == 1     # the other type's lines: skipped
