print("mining")
