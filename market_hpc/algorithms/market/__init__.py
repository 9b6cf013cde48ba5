"""The market family's algorithms (Singh, Dziurzanski & Indrusiak, HPCS'15): pricing and value
maths, the auction, node bidding, the queue's columns and indexes, the holding rule.
"""
