"""Reading Nsight Compute's CSV (gpuperf.bench.ncu): launches in order, values in numbers."""

import pytest

from gpuperf.bench.ncu import parse_csv

OUTPUT = """==PROF== Connected to process 1234
some line the program printed
"ID","Process ID","Process Name","Kernel Name","Metric Name","Metric Unit","Metric Value"
"0","1","python3","_fp8_promoted_kernel","gpu__time_duration.sum","ns","1,111,490"
"0","1","python3","_fp8_promoted_kernel","lts__t_bytes.sum.per_second","byte/s","7477280000000"
"1","1","python3","nvjet_sm90_qqtst_144x128","gpu__time_duration.sum","ns","762,720"
"""


def test_launches_come_back_in_order_with_their_metrics():
    launches = parse_csv(OUTPUT)
    assert [launch["kernel"] for launch in launches] == ["_fp8_promoted_kernel", "nvjet_sm90_qqtst_144x128"]
    assert launches[0]["metrics"]["gpu__time_duration.sum"] == {"value": 1111490.0, "unit": "ns"}
    assert launches[0]["metrics"]["lts__t_bytes.sum.per_second"]["value"] == 7.47728e12
    assert list(launches[1]["metrics"]) == ["gpu__time_duration.sum"]


def test_output_without_a_table_is_refused():
    with pytest.raises(ValueError, match="no ncu CSV table"):
        parse_csv("==ERROR== unknown metric")
