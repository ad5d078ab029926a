// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

// Token is the smallest ERC-20 the chain watcher's tests need: a fixed
// supply minted to its deployer, transfer, and the Transfer event a real
// token emits (USDT's shape: transfer, balanceOf, decimals).
contract Token {
    event Transfer(address indexed from, address indexed to, uint256 value);

    mapping(address => uint256) public balanceOf;
    uint8 public immutable decimals;

    constructor(uint8 decimals_, uint256 supply) {
        decimals = decimals_;
        balanceOf[msg.sender] = supply;
        emit Transfer(address(0), msg.sender, supply);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        require(balanceOf[msg.sender] >= value, "balance");
        balanceOf[msg.sender] -= value;
        balanceOf[to] += value;
        emit Transfer(msg.sender, to, value);
        return true;
    }
}
