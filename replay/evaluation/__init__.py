"""replay/evaluation"""
