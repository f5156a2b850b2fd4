"""quarry"""
