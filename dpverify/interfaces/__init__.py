"""The shells a user meets, all thin layers over `dpverify.audit` (docs/method.md):

- `cli`: the `dpverify` command (`dpverify audit`); `gate`: `dpverify gate`, with the drift rule
  and baseline file in `drift`, its targets in `gate_targets` and its reports in `gate_report`;
- `pytest_plugin`: the `dpverify` pytest plugin (fixture `dp_audit`, marker `dp`, collection);
- `report`, `plots`, `figures`: the report files of `dpverify audit --report` (with
  `dpverify.zcdp.report` for zCDP results);
- `outputs`: checks of the paths the commands write, before any audit runs.

Their options are defined once, in `dpverify.options`; a witness is written down by
`dpverify.evidence`. Nothing here computes a bound.
"""
