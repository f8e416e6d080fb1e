"""detector/pager"""
