"""replay/sim"""
