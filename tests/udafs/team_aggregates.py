"""A module of UDAFs as a team would ship one, for `sql-ext thriftserver --udafs`."""

import numpy as np

import sql_ext
from sql_ext.udaf import reduce_windows


@sql_ext.udaf("double")
def team_total(values):
    """The sum of a window's values (checked against SUM)."""
    return reduce_windows(np.add, values)
