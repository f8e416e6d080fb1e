"""detector/service"""
