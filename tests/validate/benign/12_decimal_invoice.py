from decimal import Decimal, ROUND_HALF_UP

lines = [("widget", Decimal("2.50"), 4), ("gadget", Decimal("10.00"), 1)]
subtotal = sum(price * qty for _, price, qty in lines)
tax = (subtotal * Decimal("0.2")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
print(f"subtotal={subtotal} tax={tax} total={subtotal + tax}")
