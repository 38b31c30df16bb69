"""Server-side apply: field paths and sets, the shape of the kinds the operator writes, fieldsV1,
managed-field entries, the structured tree operations, and the comparison of live and desired."""
