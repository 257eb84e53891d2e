"""Cross-region merge of every region's accepted awards into each board's home region (not yet built)."""
