"""``skilllift view``: a week as a static, offline HTML site (and, served, a labelling page)."""
