"""Hierarchical (2D) ring all-reduce over a rows x columns grid of ranks: reduce-scatter
along the row ring, all-reduce of the owned piece along the column ring, all-gather along
the row ring: 2(X-1) + 2(Y-1) steps for X columns and Y rows. Each phase is a ring phase
under the same dependency rule (the Symphony paper's §2.1); the row ring is the rank's
group 0, the column ring its group 1.
"""

from __future__ import annotations

from hosts.collectives.base import AllReduce
from hosts.collectives.schedule import Schedule, chunk_ranges, ring_phase


def grid_of(rows: int, cols: int) -> tuple:
    """The grid of ranks 0..rows*cols-1 filled row by row: ``grid[r][c] = r * cols + c``."""
    return tuple(tuple(r * cols + c for c in range(cols)) for r in range(rows))


def ring2d_all_reduce(grid, rank: int, nbytes: int, align: int = 4) -> Schedule:
    """``grid[r][c]``: the rank at row r, column c. Row rings run along a row, column rings
    down a column."""
    rows, cols = len(grid), len(grid[0])
    if any(len(r) != cols for r in grid):
        raise ValueError("a 2D ring needs a rectangular grid")
    where = [(i, list(row).index(rank)) for i, row in enumerate(grid) if rank in row]
    if not where:
        raise ValueError(f"rank {rank} is not in the grid")
    r, c = where[0]
    row_ring = tuple(grid[r])
    col_ring = tuple(grid[i][c] for i in range(rows))
    x, y = len(row_ring), len(col_ring)
    row_chunks = chunk_ranges(0, nbytes, x, align)
    owned = row_chunks[(c + 1) % x]                       # after the row reduce-scatter
    col_chunks = chunk_ranges(owned[0], owned[1], y, align)
    steps = ring_phase(c, x, row_chunks, 0, 0, "rs")
    first = len(steps)
    steps += ring_phase(r, y, col_chunks, first, 1, "rs")
    steps += ring_phase(r, y, col_chunks, first + y - 1, 1, "ag", own=1)
    steps += ring_phase(c, x, row_chunks, first + 2 * (y - 1), 0, "ag", own=1)
    return Schedule(rank, (row_ring, col_ring), tuple(steps))


class Ring2dAllReduce(AllReduce):
    """The group is the grid (a tuple of rows); its shape is ``(rows, columns)``."""

    name = "ring2d_allreduce"
    needs_grid = True
    schedule = staticmethod(ring2d_all_reduce)

    def n_steps(self, group):
        return 2 * (len(group[0]) - 1) + 2 * (len(group) - 1)

    def check(self, shape):
        if not (isinstance(shape, (tuple, list)) and len(shape) == 2
                and all(isinstance(x, int) and x >= 2 for x in shape)):
            return f"{self.name} needs grid = [rows, columns], each >= 2"
        return None

    def members(self, group):
        return tuple(sorted(r for row in group for r in row))

    def n_chunks(self, group):
        return len(group[0])                  # the row ring's chunks

    def group_of(self, rings, grid, rank):
        if not grid:
            raise ValueError(f"{self.name} needs a grid")
        return tuple(tuple(row) for row in grid)
