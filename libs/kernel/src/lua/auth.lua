-- needs: (lib only)
-- A token's first sight by a coordinator: the check every script makes of a caller that presents
-- a token (check_token in lib.lua), and nothing else. A: caller, th.
check_token(A.caller, load(A.caller, { 'status', 'th' }))
return reply({})
