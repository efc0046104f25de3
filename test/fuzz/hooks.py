"""Schemathesis hooks for fuzzing edgeward (loaded through SCHEMATHESIS_HOOKS by test/fuzz/schemathesis.test.ts).

JSON Schema cannot say everything the server checks: a certificate must parse, an SSH key must be a
key. The document names those fields with a `format`; the strategies here generate valid values for
them (from real certificates and keys the test made in EDGEWARD_FUZZ_FIXTURES), so that
"schema-valid" data is valid data and the checks test the server, not the generator.
"""

import json
import os
import re
from datetime import datetime
from pathlib import Path

import schemathesis
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import positive_data_acceptance

FIXTURES = Path(os.environ["EDGEWARD_FUZZ_FIXTURES"])


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


schemathesis.openapi.format("x509-ca-pem", st.just(_read("ca.pem")))
# One certificate and its key: the server checks that the key matches the leaf.
schemathesis.openapi.format("x509-chain-pem", st.just(_read("leaf.pem")))
schemathesis.openapi.format("private-key-pem", st.just(_read("leaf.key")))
schemathesis.openapi.format(
    "ssh-public-key",
    st.sampled_from([_read(path.name).strip() for path in sorted(FIXTURES.glob("ssh-*.pub"))]),
)
schemathesis.openapi.format("saml-metadata", st.just(_read("idp-metadata.xml")))
schemathesis.openapi.format(
    "cidr",
    st.sampled_from(["10.0.0.0/8", "203.0.113.0/24", "192.0.2.7/32", "2001:db8::/32", "::1/128", "0.0.0.0/0"]),
)
schemathesis.openapi.format(
    "edgeward-source-address",
    st.lists(st.sampled_from(["192.0.2.1", "10.0.0.0/8", "2001:db8::/32"]), min_size=1, max_size=3).map(",".join),
)
# Certificate times are RFC 3339 and not before 1970 (an OpenSSH certificate counts from the epoch).
schemathesis.openapi.format(
    "date-time",
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 31)).map(
        lambda moment: moment.replace(microsecond=0).isoformat() + "Z"
    ),
)
_labels = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
schemathesis.openapi.format(
    "hostname",
    st.builds(lambda a, b: f"{a}.{b}.example", _labels, _labels),
)
schemathesis.openapi.format(
    "edgeward-acl-rule",
    st.one_of(
        st.just("*"),
        st.builds(lambda a: f"bind:{a}.example.com", _labels),
        st.builds(lambda a: f"bind:*.{a}.example.com", _labels),
        st.builds(lambda a, b: f"bind:{a}={b}", _labels, _labels),
        st.builds(lambda a: f"bind:*={a}", _labels),
        st.builds(lambda p: f"bind:tcp.example.com:{p}", st.integers(1, 65535)),
    ),
)


# Refusals of schema-valid data that JSON Schema cannot foresee, each for its reason: the error
# code and a pattern its message matches from the start. Nothing else is let through.
EXPECTED_REFUSALS = [
    # A referenced id that names no resource (`ip_policy_id`, `backend_id`, a `before_id` source):
    # the same situation as an unknown id in a path, which the built-in check accepts as a 404.
    ("ERR_EDGEWARD_103", re.compile("")),
    # A relation between two fields: valid_until must come after valid_after.
    ("ERR_EDGEWARD_100", re.compile(re.escape("valid_until: must be after valid_after"))),
    # A traffic policy compiled as the edge will run it, in the compiler's own words: an expression
    # that is not CEL or not a bool, an action type the stage lacks (a TCP or TLS edge's rules can
    # only deny), an action's free-form config, outbound rules on a TCP or TLS edge. Refusals of
    # those fields by the request schema itself are not let through.
    (
        "ERR_EDGEWARD_100",
        re.compile(
            r"(policy\.)?(inbound|outbound)\[\d+\]\."
            r"(expressions\[\d+\]: (invalid CEL: |must evaluate to a bool)"
            r"|actions\[\d+\]\.(type: .*; supported: |config[.\[:]))"
        ),
    ),
    (
        "ERR_EDGEWARD_100",
        # `policy.outbound` in an edge's body, `outbound` when the body is the policy module itself.
        re.compile(r"(policy\.)?" + re.escape("outbound: must be empty or null: a TCP or TLS edge has no HTTP response")),
    ),
    # A member named __proto__ (or constructor.prototype) in a free-form object: refused, as the
    # README says, because code copying the object by assignment would set its prototype.
    ("ERR_EDGEWARD_100", re.compile(re.escape('body: a member named "__proto__"'))),
]


@schemathesis.check
def positive_data_acceptance_of_references(ctx, response, case):
    """positive_data_acceptance, with the refusals above also accepted as 400s."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except AssertionError:
        if response.status_code == 400:
            try:
                body = json.loads(response.content)
            except ValueError:
                body = {}
            if not isinstance(body, dict):
                body = {}
            for code, message in EXPECTED_REFUSALS:
                if body.get("error_code") == code and message.match(str(body.get("msg", ""))):
                    return None
        raise


# The API key the run authenticates with. The stateful phase can create another admin key and then
# delete this one (the server allows it: the admin keeps a key), after which every request is a
# 401 and the rest of the run tests nothing. Its deletion is sent for an id that names no key
# instead (a 404, which the checks accept), so the run keeps its key; api-keys.test.ts covers it.
FUZZ_KEY_ID = os.environ.get("EDGEWARD_FUZZ_KEY_ID", "")
UNKNOWN_KEY_ID = "ak_" + "0" * 27


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    parameters = case.path_parameters or {}
    if case.method.upper() == "DELETE" and case.path == "/api_keys/{id}" and parameters.get("id") == FUZZ_KEY_ID:
        parameters["id"] = UNKNOWN_KEY_ID
