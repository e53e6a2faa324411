"""Stage figures (Fig 1, 2, 4, 5 and beyond the paper): `registry` lists the figure families; each
has a compute function (`compute`, `compute_oracle`: config -> CSV frames) and a
plot function (`plot_paper`, `plot_maps`, `plot_oracle`: CSV -> PNG + PDF in the shared style)."""
