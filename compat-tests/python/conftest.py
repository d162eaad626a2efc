"""A ferrocket standalone (NameServer + broker in one process) for the C++ client tests.

The official C++ client (rocketmq-client-cpp 2.0, `librocketmq.so`) is driven through its official
Python binding, `rocketmq-client-python` 0.5.0rc2 from PyPI, whose wheel carries the compiled
library: the only build of the C++ client a registry serves.
"""

import pytest

from ferrocket_proc import session_broker


@pytest.fixture(scope="session")
def ferrocket():
    yield from session_broker()
