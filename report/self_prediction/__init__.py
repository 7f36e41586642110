"""The manuscript's self-prediction sections: numbers, sentences and tables."""
