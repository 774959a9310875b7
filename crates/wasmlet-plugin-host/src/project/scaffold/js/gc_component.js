// The component's entry: the WIT imports, and the strategy as the world's exports.
import * as host from 'wasmlet:plugin/host@0.1.2';
import * as podMeta from 'wasmlet:plugin/pod-meta@0.1.2';
import { gcWorld } from 'wasmlet-plugin-sdk/gc';
import { @TYPE@ } from './plugin.js';

export const { configure, selfCheck, planImages, planContainers } = gcWorld(@TYPE@, { host, podMeta });
